// Captured turns -> histories, as ART 0.5.23 grows them (art/trajectories/_history.py
// `_extend_branches`): a turn continues the longest existing history (same tools) whose items are
// a prefix of its prompt, extended by the prompt's rest and the sampled output; a history it does
// not continue stays as it is; each further output of the same turn (n > 1) starts a copy of that
// history. ART trains a sampled token once (its first occurrence, `_FirstOccurrenceTrie`): in the
// copies the shared part is settled, i.e. no longer trained.
export interface BranchStep<T> {
  /** Turns continue only histories of the same context (the request's tools). */
  context: string;
  prompt: T[];
  /** One list of items per sampled output. */
  outputs: T[][];
}

export interface Branch<T> {
  items: T[];
  context: string;
  /** ART's order: the lineage's first step, then the output index at each step (compared in turn). */
  order: number[];
}

export function growBranches<T>(steps: readonly BranchStep<T>[], same: (a: T, b: T) => boolean, settle: (item: T) => T): Branch<T>[] {
  let branches: Branch<T>[] = [];
  steps.forEach((step, index) => {
    const isPrefix = (items: readonly T[]) => items.length <= step.prompt.length && items.every((item, i) => same(item, step.prompt[i]!));
    const parent = branches.filter((b) => b.context === step.context && isPrefix(b.items)).reduce<Branch<T> | null>((best, b) => (best === null || b.items.length > best.items.length ? b : best), null);
    if (parent) branches = branches.filter((b) => b !== parent);
    const base = parent?.items ?? [];
    const rest = step.prompt.slice(base.length);
    step.outputs.forEach((output, k) => {
      const head = k === 0 ? base : base.map(settle);
      branches.push({ items: [...head, ...rest, ...output], context: step.context, order: [...(parent?.order ?? [index]), k] });
    });
  });
  return branches.sort((a, b) => compareOrders(a.order, b.order));
}

function compareOrders(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
