// Tenant-supplied matching (a regular expression, a schema's `pattern`) runs synchronously on the
// one event loop: a catastrophic pattern such as `(a+)+$` would stall every request. Each match is
// run under node:vm's timeout (the watchdog interrupts any JavaScript, host functions and RegExp
// backtracking included), and one evaluation's matching shares a total budget, so a hostile
// pattern costs at most a few hundred milliseconds per output and a few seconds per evaluation.
import vm from "node:vm";

/** Longest one output's match may run. */
export const MATCH_TIMEOUT_MS = 250;
/** Longest all of one evaluation's matches may run together. */
export const EVALUATION_MATCH_BUDGET_MS = 1_000;

const context = vm.createContext(Object.create(null) as Record<string, unknown>);
const callTask = new vm.Script("task()");

export type Bounded<T> = { done: true; value: T } | { done: false };

/** One evaluation's matching time. */
export class MatchBudget {
  private spentMs = 0;

  constructor(
    private readonly perCallMs = MATCH_TIMEOUT_MS,
    private readonly totalMs = EVALUATION_MATCH_BUDGET_MS,
  ) {}

  /** `task`'s result, or `done: false` when it ran out of time (or the budget was already spent). */
  run<T>(task: () => T): Bounded<T> {
    const left = this.totalMs - this.spentMs;
    if (left <= 0) return { done: false };
    const started = performance.now();
    context.task = task;
    try {
      return { done: true, value: callTask.runInContext(context, { timeout: Math.max(1, Math.min(this.perCallMs, Math.ceil(left))) }) as T };
    } catch (error) {
      if (isTimeout(error)) return { done: false };
      throw error;
    } finally {
      context.task = undefined;
      this.spentMs += performance.now() - started;
    }
  }
}

function isTimeout(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT";
}
