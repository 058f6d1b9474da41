// The tokenizer builder alone (no llama.cpp): byte alphabet, deterministic merges, vocabulary
// layout and the metadata keys llama.cpp reads.
import { describe, expect, it } from "vitest";
import { BYTE_TO_UNICODE, bytesToUnicode, unicodeToBytes } from "./byte-unicode.js";
import { buildTokenizer, SPECIAL_TOKENS, TOKEN_TYPE, tokenizerMetadata } from "./build.js";
import { learnMerges, pretokenize } from "./learn-merges.js";

describe("byte-level alphabet", () => {
  it("maps all 256 bytes to distinct non-space characters, GPT-2 style", () => {
    expect(new Set(BYTE_TO_UNICODE).size).toBe(256);
    expect(BYTE_TO_UNICODE[0x20]).toBe("Ġ");
    expect(BYTE_TO_UNICODE[0x0a]).toBe("Ċ");
    expect(BYTE_TO_UNICODE[0x41]).toBe("A");
    expect(BYTE_TO_UNICODE.some((ch) => /\s/u.test(ch))).toBe(false);
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(unicodeToBytes(bytesToUnicode(bytes))).toEqual(bytes);
  });
});

describe("pre-tokenizer (llama.cpp qwen2 regex)", () => {
  it("splits words, single digits, punctuation runs and whitespace like llama.cpp", () => {
    expect(pretokenize("Hello, world! It's 2024.")).toEqual(["Hello", ",", " world", "!", " It", "'s", " ", "2", "0", "2", "4", "."]);
    expect(pretokenize("  x = 1;\n\n    y")).toEqual([" ", " x", " =", " ", "1", ";\n\n", "   ", " y"]);
  });
});

describe("buildTokenizer", () => {
  it("is deterministic: bytes, 509 merges, then the ChatML control tokens", () => {
    const spec = buildTokenizer();
    expect(spec.tokens.length).toBe(768);
    expect(spec.tokens.slice(0, 256)).toEqual(BYTE_TO_UNICODE);
    expect(spec.merges.length).toBe(509);
    expect(new Set(spec.tokens).size).toBe(spec.tokens.length);
    expect(spec.tokens.slice(765)).toEqual([...SPECIAL_TOKENS]);
    expect(spec.ids).toEqual({ "<|endoftext|>": 765, "<|im_start|>": 766, "<|im_end|>": 767 });
    expect(spec.tokenTypes.filter((t) => t === TOKEN_TYPE.control)).toHaveLength(3);
    expect(spec.tokenTypes.slice(765)).toEqual([3, 3, 3]);
    expect(spec.eosId).toBe(767);
    // Every merge's two halves and its result are vocabulary entries.
    const vocab = new Set(spec.tokens);
    for (const merge of spec.merges) {
      const [left, right] = merge.split(" ");
      expect(vocab.has(left!) && vocab.has(right!) && vocab.has(left! + right!), merge).toBe(true);
    }
    // Learning is a pure function of corpus and budget; ties go to the pair that sorts first.
    const a = learnMerges("the cat sat on the mat; the cat ate", 20);
    const b = learnMerges("the cat sat on the mat; the cat ate", 20);
    expect(a).toEqual(b);
    expect(a.merges[0]).toBe("a t");
  });

  it("stays within a small vocabulary and writes the keys llama.cpp needs", () => {
    const spec = buildTokenizer({ vocabSize: 300 });
    expect(spec.tokens.length).toBe(300);
    const meta = tokenizerMetadata(spec);
    expect(meta.get("tokenizer.ggml.model")).toEqual({ type: "string", value: "gpt2" });
    expect(meta.get("tokenizer.ggml.pre")).toEqual({ type: "string", value: "qwen2" });
    expect(meta.get("tokenizer.ggml.eos_token_id")).toEqual({ type: "u32", value: 299 });
    expect(meta.get("tokenizer.ggml.add_bos_token")).toEqual({ type: "bool", value: false });
    expect(() => buildTokenizer({ vocabSize: 100 })).toThrow(/vocabSize must be an integer >= 259/);
  });
});
