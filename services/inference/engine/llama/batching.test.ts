// Streams generating together on one context share every decode step: each step is one llama.cpp
// decode holding a token of every stream. node-llama-cpp 3.22.1 formed the next batch as soon as
// the last sampled token's promise settled, before the other streams had queued their next token,
// so with 4 of 8 sequences busy it ran 4 decodes for every 3 steps (the streams that missed a batch
// took one of their own); patches/node-llama-cpp+3.22.1.patch waits one event-loop turn first.
// The patch also hands each step's tokens to llama.cpp in increasing sequence id: with a KV cache
// per sequence, llama.cpp splits a batch into micro-batches of consecutive increasing ids in batch
// order, each a pass over the weights, and node-llama-cpp's queue order made a step of 8 streams
// several passes once requests had moved between sequences (SmolLM2, 1 thread: 56-62 ms per step
// instead of 46-49).
// Real llama.cpp on SmolLM2; the decodes are recorded on the context's native handle.
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSmolLM2 } from "./test-model.js";

const STEPS = 24;
let model: LlamaModel;

beforeAll(async () => {
  model = await loadSmolLM2();
});
afterAll(async () => {
  await model?.dispose();
});

interface Decode {
  size: number;
  /** The sequence of each item added to the batch, in the order they were added. */
  sequenceIds: number[];
}

/** Records every decode the context runs: its token count and its items' sequences. */
function recordDecodes(target: LlamaContext): Decode[] {
  const decodes: Decode[] = [];
  const internal = target as unknown as { _ctx: Record<string | symbol, unknown> };
  const native = internal._ctx;
  let batch: Decode = { size: 0, sequenceIds: [] };
  internal._ctx = new Proxy(native, {
    get(object, property) {
      const value = object[property];
      if (typeof value !== "function") return value;
      if (property === "initBatch") return (tokens: number) => ((batch = { size: tokens, sequenceIds: [] }), value.call(object, tokens));
      if (property === "addToBatch") return (sequenceId: number, ...rest: unknown[]) => (batch.sequenceIds.push(sequenceId), value.call(object, sequenceId, ...rest));
      if (property === "decodeBatch") return () => (decodes.push(batch), value.call(object));
      return value.bind(object);
    },
  });
  return decodes;
}

function prompt(index: number): Token[] {
  return model.tokenize(`<|im_start|>user\nTell story number ${index}<|im_end|>\n<|im_start|>assistant\n`, true);
}

/** node-llama-cpp's generator, as the engine runs a choice without log-probabilities. */
async function generated(sequence: LlamaContextSequence, tokens: Token[]): Promise<number> {
  let count = 0;
  const iterator = sequence.evaluate(tokens, { temperature: 0, yieldEogToken: true });
  for await (const _token of iterator) if (++count >= STEPS) break;
  await iterator.return();
  return count;
}

/** Token by token through controlledEvaluate, as the engine runs a choice with log-probabilities. */
async function controlled(sequence: LlamaContextSequence, tokens: Token[]): Promise<number> {
  const ask = { generateNext: { token: true, logits: { filter: { tokens: [], includeTop: 2 } }, totalLogitWeight: true } } as const;
  type Input = Parameters<LlamaContextSequence["controlledEvaluate"]>[0];
  let outputs = await sequence.controlledEvaluate(tokens.map((token, index) => (index === tokens.length - 1 ? [token, ask] : token)) as Input);
  let count = 0;
  while (++count < STEPS) {
    const token = outputs[outputs.length - 1]?.next.token as Token;
    outputs = await sequence.controlledEvaluate([[token, ask]] as Input);
  }
  return count;
}

describe("decode steps of streams generating together", () => {
  for (const [label, streams] of [
    ["4 of 8 sequences, generators", [generated, generated, generated, generated]],
    ["3 of 8 sequences, generators and token-by-token choices", [generated, controlled, controlled]],
    ["8 of 8 sequences", Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? generated : controlled))],
  ] as const) {
    it(`take one decode per step: ${label}`, async () => {
      // 8 sequences, as the engine's contexts have by default (ENGINE_SEQUENCES).
      const context = await model.createContext({ sequences: 8, contextSize: 2048, threads: 1 });
      const recorded = recordDecodes(context);
      const sequences = streams.map(() => context.getSequence());
      try {
        const counts = await Promise.all(streams.map((run, index) => run(sequences[index]!, prompt(index))));
        expect(counts).toEqual(streams.map(() => STEPS));
        // The prompts may be read in one decode or, as the streams arrive, in a few; every later
        // decode carries one token of each stream.
        const decodes = recorded.map((decode) => decode.size);
        const steps = decodes.filter((size) => size <= streams.length);
        expect(steps.length, `decode sizes: ${decodes.join(",")}`).toBeLessThanOrEqual(STEPS + 1);
        expect(steps.filter((size) => size === streams.length).length).toBeGreaterThanOrEqual(STEPS - 2);
      } finally {
        await context.dispose();
      }
    });
  }
});

describe("the tokens of a decode step", () => {
  it("go to llama.cpp in increasing sequence id, whatever order the streams queued them in", async () => {
    const context = await model.createContext({ sequences: 8, contextSize: 2048, threads: 1 });
    const recorded = recordDecodes(context);
    const all = Array.from({ length: 8 }, () => context.getSequence());
    // A new context hands its sequences out in id order (the engine's pool relies on it).
    const idOf = (sequence: LlamaContextSequence) => (sequence as unknown as { _sequenceId: number })._sequenceId;
    expect(all.map(idOf)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Streams on sequences 5, 2, 7, 0 and 3, started in that order: node-llama-cpp queues their
    // tokens in that order, as it does once requests have moved between sequences.
    const picked = [5, 2, 7, 0, 3].map((id) => all[id]!);
    try {
      const counts = await Promise.all(picked.map((sequence, index) => generated(sequence, prompt(index))));
      expect(counts).toEqual(picked.map(() => STEPS));
      const steps = recorded.filter((decode) => decode.sequenceIds.length === picked.length);
      expect(steps.length).toBeGreaterThanOrEqual(STEPS - 2);
      for (const decode of recorded) expect(decode.sequenceIds, `decodes: ${recorded.map((d) => d.sequenceIds.join("/")).join(" ")}`).toEqual([...decode.sequenceIds].sort((a, b) => a - b));
    } finally {
      await context.dispose();
    }
  });
});
