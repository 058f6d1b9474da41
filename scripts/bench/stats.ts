// Figures of one benchmark level: throughput over the wall time of the whole level, and
// percentiles of time to first token over its requests.
export interface LevelFigures {
  tokensPerSecond: number;
  ttftP50Ms: number;
  ttftP95Ms: number;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank: p95 of 4 values is the largest, as a reader expects.
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

export function levelFigures(runs: readonly { tokens: number; ttftMs: number }[], seconds: number): LevelFigures {
  const ttfts = runs.map((run) => run.ttftMs);
  return { tokensPerSecond: runs.reduce((sum, run) => sum + run.tokens, 0) / seconds, ttftP50Ms: percentile(ttfts, 50), ttftP95Ms: percentile(ttfts, 95) };
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}
