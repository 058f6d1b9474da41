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

/** Per system and level, the median of each figure over interleaved runs. */
export function medianFigures<System extends string>(runs: readonly Record<System, Record<number, LevelFigures>>[], systems: readonly System[], levels: readonly number[]): Record<System, Record<number, LevelFigures>> {
  const medians = {} as Record<System, Record<number, LevelFigures>>;
  for (const system of systems) {
    medians[system] = {};
    for (const level of levels) {
      const of = (pick: (f: LevelFigures) => number) => median(runs.map((figures) => pick(figures[system][level] as LevelFigures)));
      medians[system][level] = { tokensPerSecond: of((f) => f.tokensPerSecond), ttftP50Ms: of((f) => f.ttftP50Ms), ttftP95Ms: of((f) => f.ttftP95Ms) };
    }
  }
  return medians;
}

/** One cell of a table: tokens/s, then time to first token p50 and p95. */
export function figuresCell(f: LevelFigures): string {
  return `${f.tokensPerSecond.toFixed(1).padStart(7)} ${f.ttftP50Ms.toFixed(0).padStart(5)} ${f.ttftP95Ms.toFixed(0).padStart(5)}`;
}
