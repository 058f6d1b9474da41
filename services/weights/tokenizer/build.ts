// Builds the tiny models' tokenizer: byte-level BPE in llama.cpp's "gpt2" tokenizer family with
// ids 0-255 = the 256 bytes, then learned merges, then the ChatML control tokens.
//
// Pre-tokenizer: "qwen2", not "gpt-2"/"default". llama.cpp turns on clean_spaces for those two,
// and detokenising then deletes the space in " ," " ." " ?" " !" and " 's", so text would not
// round-trip. "qwen2" is the same byte-level BPE with clean_spaces off, and is the Qwen/ChatML
// pairing this template imitates.
import { gv } from "../gguf/values.js";
import type { GgufMetadata } from "../gguf/types.js";
import { BYTE_TO_UNICODE } from "./byte-unicode.js";
import { BUILT_IN_CORPUS } from "./corpus.js";
import { learnMerges } from "./learn-merges.js";

export const SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;
export type SpecialToken = (typeof SPECIAL_TOKENS)[number];

/** llama.cpp token attributes as stored in tokenizer.ggml.token_type. */
export const TOKEN_TYPE = { normal: 1, control: 3 } as const;

export interface TokenizerSpec {
  tokens: string[];
  tokenTypes: number[];
  merges: string[];
  ids: Record<SpecialToken, number>;
  bosId: number;
  eosId: number;
  padId: number;
}

export interface TokenizerOptions {
  /** Total vocabulary including bytes and special tokens; fewer if the corpus runs out of pairs. */
  vocabSize?: number;
  corpus?: string;
}

export const DEFAULT_VOCAB_SIZE = 768;

const cache = new Map<string, TokenizerSpec>();

export function buildTokenizer(options: TokenizerOptions = {}): TokenizerSpec {
  const vocabSize = options.vocabSize ?? DEFAULT_VOCAB_SIZE;
  const corpus = options.corpus ?? BUILT_IN_CORPUS;
  const minimum = 256 + SPECIAL_TOKENS.length;
  if (!Number.isInteger(vocabSize) || vocabSize < minimum) throw new Error(`vocabSize must be an integer >= ${minimum}`);
  const key = `${vocabSize}\u0000${corpus}`;
  const cached = cache.get(key);
  if (cached) return cached;

  const { merges, newTokens } = learnMerges(corpus, vocabSize - minimum);
  const base = 256 + newTokens.length;
  const ids: Record<SpecialToken, number> = { "<|endoftext|>": base, "<|im_start|>": base + 1, "<|im_end|>": base + 2 };
  const tokens = [...BYTE_TO_UNICODE, ...newTokens, ...SPECIAL_TOKENS];
  const tokenTypes = tokens.map((_, i) => (i >= tokens.length - SPECIAL_TOKENS.length ? TOKEN_TYPE.control : TOKEN_TYPE.normal));
  const spec: TokenizerSpec = {
    tokens,
    tokenTypes,
    merges,
    ids,
    bosId: ids["<|endoftext|>"],
    eosId: ids["<|im_end|>"],
    padId: ids["<|endoftext|>"],
  };
  cache.set(key, spec);
  return spec;
}

/** The tokenizer.ggml.* keys for a model file. */
export function tokenizerMetadata(spec: TokenizerSpec): GgufMetadata {
  return new Map([
    ["tokenizer.ggml.model", gv.str("gpt2")],
    ["tokenizer.ggml.pre", gv.str("qwen2")],
    ["tokenizer.ggml.tokens", gv.strings(spec.tokens)],
    ["tokenizer.ggml.token_type", gv.numbers("i32", spec.tokenTypes)],
    ["tokenizer.ggml.merges", gv.strings(spec.merges)],
    ["tokenizer.ggml.bos_token_id", gv.u32(spec.bosId)],
    ["tokenizer.ggml.eos_token_id", gv.u32(spec.eosId)],
    ["tokenizer.ggml.padding_token_id", gv.u32(spec.padId)],
    ["tokenizer.ggml.add_bos_token", gv.bool(false)],
    ["tokenizer.ggml.add_eos_token", gv.bool(false)],
  ]);
}
