// Streams generating together on one context share every decode step: each step is one llama.cpp
// decode holding a token of every stream. node-llama-cpp 3.22.1 formed the next batch as soon as
// the last sampled token's promise settled, before the other streams had queued their next token,
// so with 4 of 8 sequences busy it ran 4 decodes for every 3 steps (the streams that missed a batch
// took one of their own); patches/node-llama-cpp+3.22.1.patch waits one event-loop turn first.
// Real llama.cpp on SmolLM2; the decodes are counted on the context's native handle.
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

/** Records the token count of every decode the context runs. */
function countDecodes(target: LlamaContext, sizes: number[]): void {
  const internal = target as unknown as { _ctx: Record<string | symbol, unknown> };
  const native = internal._ctx;
  let size = 0;
  internal._ctx = new Proxy(native, {
    get(object, property) {
      const value = object[property];
      if (typeof value !== "function") return value;
      if (property === "initBatch") return (tokens: number) => ((size = tokens), value.call(object, tokens));
      if (property === "decodeBatch") return () => (sizes.push(size), value.call(object));
      return value.bind(object);
    },
  });
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
      const decodes: number[] = [];
      countDecodes(context, decodes);
      const sequences = streams.map(() => context.getSequence());
      try {
        const counts = await Promise.all(streams.map((run, index) => run(sequences[index]!, prompt(index))));
        expect(counts).toEqual(streams.map(() => STEPS));
        // The prompts may be read in one decode or, as the streams arrive, in a few; every later
        // decode carries one token of each stream.
        const steps = decodes.filter((size) => size <= streams.length);
        expect(steps.length, `decode sizes: ${decodes.join(",")}`).toBeLessThanOrEqual(STEPS + 1);
        expect(steps.filter((size) => size === streams.length).length).toBeGreaterThanOrEqual(STEPS - 2);
      } finally {
        await context.dispose();
      }
    });
  }
});
