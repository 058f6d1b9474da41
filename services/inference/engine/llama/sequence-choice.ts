// Which free sequences of a context a request takes. Two things make a sequence a good pick:
// - the prompt prefix it already holds (same cache_salt), whose tokens are not evaluated again;
// - keeping the busy sequences one run of consecutive ids. node-llama-cpp gives each sequence a
//   KV cache of its own, and llama.cpp then runs a decode step as one pass over the weights per run
//   of consecutive sequence ids in the batch. Measured (4 streams, 256 tokens each): the tiny model
//   on 1 thread 2490-2876 tokens/s on consecutive sequences, 1846-1997 on every other one;
//   SmolLM2 on 2 threads 221-231 against 163-168.
// A prefix is saved once; a split costs every stream in the batch on every step for as long as the
// request generates (SmolLM2, 1 thread, 8 streams: 56-62 ms per step split, 46-49 ms whole, about
// 1.3 s over 128 tokens, the time 256-330 prompt tokens take to evaluate there). So each run a pick
// adds counts as SPLIT_COST_TOKENS fewer prefix tokens, and each run it closes as that many more.
export const SPLIT_COST_TOKENS = 256;

export interface SequenceCandidate {
  /** The sequence's id in its context (llama.cpp's seq_id). */
  id: number;
  /** Prompt tokens it already holds. */
  shared: number;
  /** Tokens it holds in all (an empty one is taken first, so other cached prefixes survive). */
  held: number;
}

/** The `n` candidates to take, best first, given the ids of the context's busy sequences. */
export function chooseSequences<C extends SequenceCandidate>(free: readonly C[], busy: ReadonlySet<number>, n: number): C[] {
  const taken = new Set(busy);
  const left = [...free];
  const chosen: C[] = [];
  while (chosen.length < n && left.length > 0) {
    const value = (candidate: C) => candidate.shared - runsAdded(taken, candidate.id) * SPLIT_COST_TOKENS;
    left.sort((a, b) => value(b) - value(a) || a.held - b.held || a.id - b.id);
    const best = left.shift() as C;
    chosen.push(best);
    taken.add(best.id);
  }
  return chosen;
}

/** How many runs of consecutive ids `id` adds to `ids`: 1 (a run of its own), 0 (extends one) or -1 (joins two). */
export function runsAdded(ids: ReadonlySet<number>, id: number): number {
  return 1 - (ids.has(id - 1) ? 1 : 0) - (ids.has(id + 1) ? 1 : 0);
}
