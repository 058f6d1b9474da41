// Small helpers of the job flow: the cancellation error and the job's metric averages.

export class TrainingAbortedError extends Error {
  constructor() {
    super("training was cancelled");
    this.name = "AbortError";
  }
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
