// W&B's sampled history: at most `samples` rows of a range, spread evenly over it, the first and
// the last always among them; all of them when there are no more than `samples`.

/** Rows one history read may sample, at most (a larger `samples` is taken as this). */
export const MAX_HISTORY_SAMPLES = 10_000;
/** `samples` when a request gives none (as W&B's `run.history()`). */
export const DEFAULT_HISTORY_SAMPLES = 500;

export function samplesOf(value: unknown): number {
  const samples = typeof value === "number" && Number.isFinite(value) ? Math.trunc(value) : DEFAULT_HISTORY_SAMPLES;
  return Math.max(1, Math.min(samples, MAX_HISTORY_SAMPLES));
}

/** Positions 0 .. count-1 to keep, ascending: every one when count <= samples. */
export function evenlySpaced(count: number, samples: number): number[] {
  if (count <= samples) return Array.from({ length: count }, (_, index) => index);
  if (samples === 1) return [0];
  const picked = new Set<number>();
  for (let i = 0; i < samples; i++) picked.add(Math.round((i * (count - 1)) / (samples - 1)));
  return [...picked];
}
