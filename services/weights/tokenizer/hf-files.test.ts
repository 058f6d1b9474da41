// The Hugging Face files written from a GGUF's tokenizer metadata, without transformers (the
// comparison with transformers and llama.cpp is test/training/hf-tokenizer-files.test.ts).
import { mkdtemp, rm, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gv } from "../gguf/values.js";
import { writeGguf } from "../gguf/writer.js";
import type { GgufMetadata } from "../gguf/types.js";
import { CHATML_TEMPLATE } from "../chat-template.js";
import { buildTokenizer, tokenizerMetadata } from "./build.js";
import { HfTokenizerFileCache, hfTokenizerFiles, SUPPORTED_PRE_TOKENIZERS, UnsupportedTokenizerError } from "./hf-files.js";

const tinyMetadata = (): GgufMetadata =>
  new Map([
    ["general.architecture", gv.str("llama")],
    ["llama.context_length", gv.u32(2048)],
    ...tokenizerMetadata(buildTokenizer()),
    ["tokenizer.chat_template", gv.str(CHATML_TEMPLATE)],
  ]);

const parse = (text: string) => JSON.parse(text) as Record<string, unknown>;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "hf-files-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("hfTokenizerFiles", () => {
  it("writes the tiny models' vocabulary, merges, control tokens, qwen2 splitting and ChatML settings", () => {
    const spec = buildTokenizer();
    const files = hfTokenizerFiles(tinyMetadata());
    const tokenizer = parse(files["tokenizer.json"]) as {
      model: { type: string; vocab: Record<string, number>; merges: [string, string][]; ignore_merges: boolean; byte_fallback: boolean };
      added_tokens: { id: number; content: string; special: boolean }[];
      pre_tokenizer: { type: string; pretokenizers: { type: string; pattern?: { Regex: string }; behavior?: string; use_regex?: boolean }[] };
      decoder: { type: string };
      normalizer: unknown;
      post_processor: { type: string };
    };
    expect(tokenizer.model.type).toBe("BPE");
    expect(Object.keys(tokenizer.model.vocab)).toHaveLength(768);
    spec.tokens.forEach((token, id) => expect(tokenizer.model.vocab[token]).toBe(id));
    expect(tokenizer.model.merges).toEqual(spec.merges.map((m) => m.split(" ")));
    expect(tokenizer.model.ignore_merges).toBe(false);
    expect(tokenizer.added_tokens.map((t) => [t.id, t.content, t.special])).toEqual([
      [765, "<|endoftext|>", true],
      [766, "<|im_start|>", true],
      [767, "<|im_end|>", true],
    ]);
    // One Split per llama.cpp regex (qwen2 has one), then bytes to the byte-level alphabet.
    expect(tokenizer.pre_tokenizer.pretokenizers.map((p) => [p.type, p.behavior ?? null])).toEqual([
      ["Split", "Isolated"],
      ["ByteLevel", null],
    ]);
    expect(tokenizer.pre_tokenizer.pretokenizers[0]?.pattern?.Regex).toContain("\\p{N}|");
    expect(tokenizer.pre_tokenizer.pretokenizers[1]?.use_regex).toBe(false);
    expect(tokenizer.normalizer).toBeNull();
    expect(tokenizer.decoder.type).toBe("ByteLevel");
    // No BOS added: the post-processor only maps offsets.
    expect(tokenizer.post_processor.type).toBe("ByteLevel");

    expect(parse(files["tokenizer_config.json"])).toEqual({
      tokenizer_class: "PreTrainedTokenizerFast",
      bos_token: "<|endoftext|>",
      eos_token: "<|im_end|>",
      unk_token: null,
      pad_token: "<|endoftext|>",
      add_bos_token: false,
      add_eos_token: false,
      clean_up_tokenization_spaces: false,
      model_max_length: 2048,
      chat_template: CHATML_TEMPLATE,
    });
    expect(parse(files["special_tokens_map.json"])).toEqual({ bos_token: "<|endoftext|>", eos_token: "<|im_end|>", pad_token: "<|endoftext|>" });
  });

  it("keeps token texts a JS object would mangle, and user-defined tokens as plain added tokens", () => {
    const meta = tinyMetadata();
    const tokens = [...buildTokenizer().tokens];
    tokens[700] = "__proto__";
    tokens[701] = "12";
    const types = tokens.map((_, i) => (i >= 765 ? 3 : i === 702 ? 4 : 1));
    meta.set("tokenizer.ggml.tokens", gv.strings(tokens));
    meta.set("tokenizer.ggml.token_type", gv.numbers("i32", types));
    const tokenizer = parse(hfTokenizerFiles(meta)["tokenizer.json"]) as { model: { vocab: Record<string, number> }; added_tokens: { id: number; special: boolean }[] };
    expect(Object.hasOwn(tokenizer.model.vocab, "__proto__")).toBe(true);
    expect(tokenizer.model.vocab["__proto__"]).toBe(700);
    expect(tokenizer.model.vocab["12"]).toBe(701);
    expect(tokenizer.added_tokens.find((t) => t.id === 702)).toMatchObject({ special: false });
  });

  it("adds BOS where llama.cpp does: the file's add_bos_token, else the pre-tokenizer type's default", () => {
    const meta = tinyMetadata();
    meta.set("tokenizer.ggml.pre", gv.str("llama-bpe"));
    meta.delete("tokenizer.ggml.add_bos_token");
    const files = hfTokenizerFiles(meta);
    const tokenizer = parse(files["tokenizer.json"]) as { model: { ignore_merges: boolean }; post_processor: { type: string; single: unknown[] } };
    expect(tokenizer.model.ignore_merges).toBe(true);
    expect(tokenizer.post_processor.type).toBe("TemplateProcessing");
    expect(tokenizer.post_processor.single).toEqual([{ SpecialToken: { id: "<|endoftext|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }]);
    const config = parse(files["tokenizer_config.json"]);
    expect(config).toMatchObject({ add_bos_token: true, clean_up_tokenization_spaces: true, clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output: true });
    meta.set("tokenizer.ggml.add_bos_token", gv.bool(false));
    expect(parse(hfTokenizerFiles(meta)["tokenizer_config.json"])).toMatchObject({ add_bos_token: false });
  });

  it("refuses SentencePiece and the pre-tokenizers it does not write, saying which", () => {
    const spm = tinyMetadata();
    spm.set("tokenizer.ggml.model", gv.str("llama"));
    expect(() => hfTokenizerFiles(spm)).toThrow(UnsupportedTokenizerError);
    expect(() => hfTokenizerFiles(spm)).toThrow(/tokenizer\.ggml\.model "llama" \(SentencePiece vocabularies are not converted yet\)/);
    const tekken = tinyMetadata();
    tekken.set("tokenizer.ggml.pre", gv.str("tekken"));
    expect(() => hfTokenizerFiles(tekken)).toThrow(/pre-tokenizer "tekken" is not one written .*supported: default, llama3/);
    const none = tinyMetadata();
    none.delete("tokenizer.ggml.model");
    expect(() => hfTokenizerFiles(none)).toThrow(/no tokenizer\.ggml\.model/);
    for (const pre of ["qwen2", "smollm", "gpt-2", "llama-bpe", "qwen35", "default"]) expect(SUPPORTED_PRE_TOKENIZERS).toContain(pre);
  });
});

describe("HfTokenizerFileCache", () => {
  it("makes a file's tokenizer once, and again when the file changes", async () => {
    const path = join(dir, "model.gguf");
    await writeGguf(path, tinyMetadata(), []);
    const cache = new HfTokenizerFileCache();
    const first = await cache.get(path);
    expect(await cache.get(path)).toBe(first);
    const changed = tinyMetadata();
    changed.set("llama.context_length", gv.u32(4096));
    await writeGguf(path, changed, []);
    await utimes(path, new Date(), new Date(Date.now() + 5_000));
    const second = await cache.get(path);
    expect(second).not.toBe(first);
    expect(parse(second["tokenizer_config.json"])).toMatchObject({ model_max_length: 4096 });
    await expect(cache.get(join(dir, "missing.gguf"))).rejects.toThrow(/ENOENT/);
  });
});
