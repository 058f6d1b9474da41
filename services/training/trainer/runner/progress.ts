// Small helpers shared by the SFT and RL loops: step reporting, cancellation, metric averages.

export type StepReporter = (metrics: Record<string, number>) => void;

export class TrainingAbortedError extends Error {
  constructor() {
    super("training was cancelled");
    this.name = "AbortError";
  }
}

/** Cancellation is honoured between optimizer steps (a step itself is not interruptible). */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new TrainingAbortedError();
}

/** Spec §6.2: the job's metrics are the arithmetic mean of the per-step dicts (non-finite values skipped). */
export function meanMetrics(steps: readonly Record<string, number>[]): Record<string, number> {
  const sums = new Map<string, { sum: number; n: number }>();
  for (const s of steps) {
    for (const [k, v] of Object.entries(s)) {
      if (!Number.isFinite(v)) continue;
      const e = sums.get(k) ?? { sum: 0, n: 0 };
      e.sum += v;
      e.n += 1;
      sums.set(k, e);
    }
  }
  const out: Record<string, number> = {};
  for (const [k, { sum, n }] of sums) out[k] = sum / n;
  return out;
}
