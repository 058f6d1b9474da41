// The incremental detokenizer against decoding everything at once, on a real tokenizer
// (SmolLM2's byte-level BPE, where one character can take several tokens).
import { resolve } from "node:path";
import type { LlamaModel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLlama } from "./binary.js";
import { IncrementalDetokenizer } from "./detokenizer.js";

let model: LlamaModel;
beforeAll(async () => {
  const llama = await loadLlama();
  model = await llama.loadModel({ modelPath: resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"), vocabOnly: true });
});
afterAll(() => model?.dispose());

const texts = [
  "Plain English, with spaces and punctuation: done.",
  "Émoji 🧪🦙 and 中文字符 and ünïcödé, mixed with   spaces\tand\nnewlines.",
  "<|im_start|>assistant\nspecial tokens kept<|im_end|>",
  "👩‍👩‍👧‍👦 a joined family emoji, then ∑∫√ maths",
];

describe("IncrementalDetokenizer", () => {
  for (const specials of [false, true]) {
    it(`gives the text a whole decode gives, and never a broken character on the way (special tokens ${specials ? "kept" : "dropped"})`, () => {
      for (const text of texts) {
        const tokens = model.tokenize(text, true);
        const whole = model.detokenize(tokens, specials);
        const detokenizer = new IncrementalDetokenizer((part) => model.detokenize(part, specials));
        let previous = "";
        for (const token of tokens) {
          const sofar = detokenizer.push(token);
          expect(sofar.startsWith(previous)).toBe(true);
          expect(whole.startsWith(sofar)).toBe(true);
          expect(sofar).not.toContain("\uFFFD");
          previous = sofar;
        }
        expect(detokenizer.full()).toBe(whole);
      }
    });
  }

  it("holds back a character split across tokens until it is whole", () => {
    const tokens = model.tokenize("🦙", false);
    expect(tokens.length).toBeGreaterThan(1); // byte-level BPE: the emoji's bytes are several tokens
    const detokenizer = new IncrementalDetokenizer((part) => model.detokenize(part, false));
    const seen = tokens.map((token) => detokenizer.push(token));
    expect(seen.slice(0, -1).every((text) => text === "")).toBe(true);
    expect(seen.at(-1)).toBe("🦙");
  });
});
