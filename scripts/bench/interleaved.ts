// What both inference benchmarks do the same way: each concurrency level as that many streamed
// requests at once, and systems measured in interleaved runs (the order rotates per run, so drift
// on a shared machine hits every column alike), a table per run, then the medians.
import { levelFigures, medianFigures, type LevelFigures } from "./stats.js";
import { streamChat } from "./stream-client.js";

export type Figures = Record<number, LevelFigures>;

/** The prompt of a level's `index`-th request (the same at every level, so servers can reuse it). */
export const storyPrompt = (index: number): string => `Story number ${index + 1}`;

/** Each level's `level` concurrent streamed chat completions against one OpenAI-compatible server. */
export async function streamLevels(target: { url: string; key: string | null; model: string }, levels: readonly number[], maxTokens: number): Promise<Figures> {
  const figures: Figures = {};
  for (const level of levels) {
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: level }, (_, i) => streamChat({ ...target, prompt: storyPrompt(i), maxTokens })));
    figures[level] = levelFigures(runs, (performance.now() - started) / 1000);
  }
  return figures;
}

/** `runs` interleaved runs over the systems, each printed as it ends; resolves with the medians. */
export async function interleavedRuns<System extends string>(
  systems: readonly System[],
  levels: readonly number[],
  runs: number,
  measure: (system: System) => Promise<Figures>,
  print: (title: string, figures: Record<System, Figures>) => void,
): Promise<Record<System, Figures>> {
  const all: Record<System, Figures>[] = [];
  for (let run = 0; run < runs; run++) {
    const order = systems.map((_, i) => systems[(i + run) % systems.length] as System);
    const figures = {} as Record<System, Figures>;
    for (const system of order) figures[system] = await measure(system);
    all.push(figures);
    print(`run ${run + 1}/${runs} (order: ${order.join(", ")})`, figures);
  }
  return medianFigures(all, systems, levels);
}
