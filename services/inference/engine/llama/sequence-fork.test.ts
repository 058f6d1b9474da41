// A sequence given another's state (through a state file for a short state, the whole-buffer copy
// for a long one) continues exactly as the original: the same logits for the next token, and
// for the token after that, on SmolLM2 (real llama.cpp, a context of several sequences).
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSmolLM2 } from "./test-model.js";
import { copySequenceState } from "./sequence-fork.js";

let model: LlamaModel;
beforeAll(async () => {
  model = await loadSmolLM2();
});
afterAll(async () => {
  await model?.dispose();
});

/** The next token's 5 most likely tokens and raw logits after `token`, and the normaliser. */
async function next(sequence: LlamaContextSequence, token: Token): Promise<string> {
  const [out] = await sequence.controlledEvaluate([[token, { generateNext: { logits: { filter: { tokens: [], includeTop: 5 } }, totalLogitWeight: true } }]]);
  return JSON.stringify([[...(out?.next.logits ?? new Map())], out?.next.totalLogitWeight]);
}

describe("copySequenceState", () => {
  for (const [kind, words] of [["a state file (short state)", 10], ["the whole-buffer copy (state past a quarter of the context)", 60]] as const) {
    it(`gives the targets the source's tokens and cache, through ${kind}`, async () => {
      // A context of its own: disposed sequences return to a context only once its lock is free.
      const context: LlamaContext = await model.createContext({ sequences: 3, contextSize: 512, threads: 1 });
      const [source, first, second] = [context.getSequence(), context.getSequence(), context.getSequence()];
      try {
        const tokens = model.tokenize(Array.from({ length: words }, (_, i) => `word${i}`).join(" "));
        expect(tokens.length * 4 < 512).toBe(words === 10);
        // A target holding something else before the copy: it must not leak into the result.
        await second.evaluateWithoutGeneratingNewTokens(model.tokenize("unrelated text first"));
        await source.evaluateWithoutGeneratingNewTokens(tokens.slice(0, -1));
        await copySequenceState(source, [first, second]);
        for (const target of [first, second]) expect([...target.contextTokens]).toEqual(tokens.slice(0, -1));
        const last = tokens[tokens.length - 1] as Token;
        const expected = await next(source, last);
        expect(await next(first, last)).toBe(expected);
        expect(await next(second, last)).toBe(expected);
        // And the step after: the copied cache holds every position.
        const again = await next(source, last);
        expect(await next(first, last)).toBe(again);
      } finally {
        await context.dispose();
      }
    });
  }
});
