// A GGUF's tokenizer as Hugging Face tokenizer files (tokenizer.json in the `tokenizers` library's
// format, tokenizer_config.json, special_tokens_map.json), so that transformers'
// `AutoTokenizer.from_pretrained` gives the tokens llama.cpp gives for the same text: the engine and
// the trainer tokenize with llama.cpp, a client (Tinker's SDK, tinker-cookbook) with transformers.
//
// Only byte-level BPE (`tokenizer.ggml.model = "gpt2"`) is written, and only for the pre-tokenizer
// types (`tokenizer.ggml.pre`) whose llama.cpp splitting is the regex list below (src/llama-vocab.cpp,
// llm_tokenizer_bpe): each regex splits every piece of the one before into matches and the text
// between them, which is what a `Split` pre-tokenizer with behavior `Isolated` does, so the HF
// pre-tokenizer is one Split per llama.cpp regex (the same regex text), then ByteLevel without its
// own regex. Types whose llama.cpp regexes are rewrites for std::regex (gpt-4o, tekken, deepseek,
// ...) would differ from their HF originals on non-ASCII letters and are refused, as are
// SentencePiece (`llama`) and the other vocabulary kinds: UnsupportedTokenizerError says which.
//
// What is kept from llama.cpp's reading of the file:
// - vocabulary ids are the GGUF's token order; merges keep their order (a repeated merge keeps its
//   first rank, as llama.cpp's map does);
// - control (3) and unknown (2) tokens are special added tokens, user-defined (4) ones plain added
//   tokens: llama.cpp matches both in text (user-defined even when special tokens are not parsed);
// - add_bos / add_eos: the file's keys, else the pre-tokenizer type's default (llama3: BOS);
// - `ignore_merges` for the types llama.cpp sets it on (a piece that is a whole token is that token);
// - clean_up_tokenization_spaces = llama.cpp's clean_spaces for the type (its decode removes the
//   space before ?!., and in " 's" " 'm" " 're" " 've"; transformers' clean-up also in " n't", and
//   transformers 5 applies it to BPE only with the long flag written next to it);
// - no normalizer: llama.cpp does not normalise BPE text (Qwen's own tokenizer.json has NFC).
import { readGgufHeader } from "../gguf/reader.js";
import { getNumber, getString, getStrings } from "../gguf/values.js";
import type { GgufMetadata } from "../gguf/types.js";
import { stat } from "node:fs/promises";

export const HF_TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"] as const;
export type HfTokenizerFileName = (typeof HF_TOKENIZER_FILES)[number];
export type HfTokenizerFiles = Record<HfTokenizerFileName, string>;

export class UnsupportedTokenizerError extends Error {
  override readonly name = "UnsupportedTokenizerError";
}

// llama.cpp's regexes (src/llama-vocab.cpp), verbatim.
const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const LLAMA3 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const QWEN2 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const QWEN35 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const DEFAULT = ["[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]"];

interface PreTokenizerKind {
  regexes: readonly string[];
  /** llama.cpp's clean_spaces for this type. */
  cleanSpaces: boolean;
  ignoreMerges: boolean;
  /** add_bos when the file has no tokenizer.ggml.add_bos_token. */
  addBos: boolean;
}

const kind = (regexes: readonly string[], cleanSpaces: boolean, extra: Partial<PreTokenizerKind> = {}): PreTokenizerKind => ({
  regexes,
  cleanSpaces,
  ignoreMerges: false,
  addBos: false,
  ...extra,
});

/** tokenizer.ggml.pre values served, with llama.cpp's settings for each (llama_vocab::impl::load). */
const PRE_TOKENIZERS: Readonly<Record<string, PreTokenizerKind>> = {
  default: kind(DEFAULT, true),
  ...Object.fromEntries(
    ["llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"].map((p) => [p, kind([LLAMA3], true, { ignoreMerges: true, addBos: true })]),
  ),
  dbrx: kind([LLAMA3], true),
  "smaug-bpe": kind([LLAMA3], true),
  ...Object.fromEntries(["gpt-2", "phi-2", "gigachat", "a.x-4.0", "mellum", "mpt", "olmo", "jais", "exaone4"].map((p) => [p, kind([GPT2], true)])),
  trillion: kind([GPT2], false),
  "granite-docling": kind([GPT2], false),
  ...Object.fromEntries(["starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"].map((p) => [p, kind(["\\p{N}", GPT2], true)])),
  "command-r": kind(["\\p{N}", GPT2], false),
  smollm: kind(["\\p{N}", GPT2], false),
  ...Object.fromEntries(["qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open"].map((p) => [p, kind([QWEN2], false)])),
  megrez: kind([QWEN2], true),
  stablelm2: kind([QWEN2], true),
  qwen35: kind([QWEN35], false),
};

export const SUPPORTED_PRE_TOKENIZERS: readonly string[] = Object.keys(PRE_TOKENIZERS);

/** llama.cpp's token types (tokenizer.ggml.token_type). */
const TOKEN_TYPE = { unknown: 2, control: 3, userDefined: 4 } as const;

export interface HfTokenizerOptions {
  /** model_max_length; default the file's `<arch>.context_length`. */
  modelMaxLength?: number;
}

/** The three files' text for a GGUF's metadata; UnsupportedTokenizerError for tokenizers not written. */
export function hfTokenizerFiles(metadata: GgufMetadata, options: HfTokenizerOptions = {}): HfTokenizerFiles {
  const model = getString(metadata, "tokenizer.ggml.model");
  if (model !== "gpt2") {
    const what = model === undefined ? "no tokenizer.ggml.model" : `tokenizer.ggml.model "${model}"`;
    const hint = model === "llama" ? " (SentencePiece vocabularies are not converted yet)" : "";
    throw new UnsupportedTokenizerError(`the GGUF has ${what}${hint}: only byte-level BPE ("gpt2") tokenizers are written as Hugging Face files`);
  }
  const pre = getString(metadata, "tokenizer.ggml.pre") || "default";
  const preKind = Object.hasOwn(PRE_TOKENIZERS, pre) ? PRE_TOKENIZERS[pre] : undefined;
  if (!preKind) {
    throw new UnsupportedTokenizerError(`the GGUF's pre-tokenizer "${pre}" is not one written as Hugging Face files (supported: ${SUPPORTED_PRE_TOKENIZERS.join(", ")})`);
  }
  const tokens = getStrings(metadata, "tokenizer.ggml.tokens");
  if (!tokens || tokens.length === 0) throw new UnsupportedTokenizerError("the GGUF has no tokenizer.ggml.tokens");
  const merges = getStrings(metadata, "tokenizer.ggml.merges");
  if (!merges) throw new UnsupportedTokenizerError("the GGUF has no tokenizer.ggml.merges");
  const typesValue = metadata.get("tokenizer.ggml.token_type");
  const types = typesValue?.type === "array" && typeof typesValue.value[0] === "number" ? (typesValue.value as readonly number[]) : [];

  const tokenId = (key: string, fallback?: number): number | null => {
    const id = getNumber(metadata, key) ?? fallback;
    return id !== undefined && Number.isInteger(id) && id >= 0 && id < tokens.length ? id : null;
  };
  // llama.cpp's defaults for a "gpt2" vocabulary without the keys: BOS and EOS 11.
  const bos = tokenId("tokenizer.ggml.bos_token_id", 11);
  const eos = tokenId("tokenizer.ggml.eos_token_id", 11);
  const unk = tokenId("tokenizer.ggml.unknown_token_id");
  const pad = tokenId("tokenizer.ggml.padding_token_id");
  const addBos = booleanKey(metadata, "tokenizer.ggml.add_bos_token") ?? preKind.addBos;
  const addEos = booleanKey(metadata, "tokenizer.ggml.add_eos_token") ?? false;
  const text = (id: number | null) => (id === null ? null : tokens[id]!);

  const architecture = getString(metadata, "general.architecture");
  const contextLength = architecture ? getNumber(metadata, `${architecture}.context_length`) : undefined;
  const modelMaxLength = options.modelMaxLength ?? contextLength ?? null;

  return {
    "tokenizer.json": tokenizerJson({ tokens, types, merges, preKind, bos: addBos ? bos : null, eos: addEos ? eos : null }),
    "tokenizer_config.json": `${JSON.stringify(
      {
        tokenizer_class: "PreTrainedTokenizerFast",
        bos_token: text(bos),
        eos_token: text(eos),
        unk_token: text(unk),
        pad_token: text(pad),
        add_bos_token: addBos,
        add_eos_token: addEos,
        clean_up_tokenization_spaces: preKind.cleanSpaces,
        // transformers 5 skips the clean-up for BPE tokenizers unless this is set too.
        ...(preKind.cleanSpaces ? { clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output: true } : {}),
        model_max_length: modelMaxLength,
        ...(getString(metadata, "tokenizer.chat_template") ? { chat_template: getString(metadata, "tokenizer.chat_template") } : {}),
      },
      null,
      2,
    )}\n`,
    "special_tokens_map.json": `${JSON.stringify(
      Object.fromEntries(
        Object.entries({ bos_token: text(bos), eos_token: text(eos), unk_token: text(unk), pad_token: text(pad) }).filter(([, v]) => v !== null),
      ),
      null,
      2,
    )}\n`,
  };
}

function booleanKey(metadata: GgufMetadata, key: string): boolean | undefined {
  const v = metadata.get(key);
  return v?.type === "bool" ? v.value : undefined;
}

interface TokenizerJsonInput {
  tokens: readonly string[];
  types: readonly number[];
  merges: readonly string[];
  preKind: PreTokenizerKind;
  /** Added in front / at the end of every encoded text (add_special_tokens), if any. */
  bos: number | null;
  eos: number | null;
}

/**
 * tokenizer.json. The vocabulary and merges are written by hand: a vocabulary is a JSON object
 * keyed by token text, and a JS object would take "__proto__" for its prototype and reorder
 * integer-like keys; and SmolLM2's 49k tokens are 2 MB, written once per model file.
 */
function tokenizerJson({ tokens, types, merges, preKind, bos, eos }: TokenizerJsonInput): string {
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false };
  const addedTokens: object[] = [];
  // A repeated text is its last id, as in llama.cpp's text -> id map (such files are broken
  // either way; none of ours has one).
  const ids = new Map<string, number>();
  tokens.forEach((token, id) => {
    ids.set(token, id);
    const type = types[id];
    if (type === TOKEN_TYPE.control || type === TOKEN_TYPE.unknown || type === TOKEN_TYPE.userDefined) {
      addedTokens.push({ id, content: token, single_word: false, lstrip: false, rstrip: false, normalized: false, special: type !== TOKEN_TYPE.userDefined });
    }
  });
  const vocab = [...ids].map(([token, id]) => `${JSON.stringify(token)}:${id}`);
  const pairs: string[] = [];
  const seenMerges = new Set<string>();
  for (const merge of merges) {
    // llama.cpp splits at the first space after the first character.
    const at = merge.indexOf(" ", 1);
    if (at < 0 || seenMerges.has(merge)) continue;
    seenMerges.add(merge);
    pairs.push(JSON.stringify([merge.slice(0, at), merge.slice(at + 1)]));
  }
  const head = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [...preKind.regexes.map((regex) => ({ type: "Split", pattern: { Regex: regex }, behavior: "Isolated", invert: false })), byteLevel],
    },
    post_processor: postProcessor(tokens, bos, eos) ?? byteLevel,
    decoder: byteLevel,
  };
  const model = [
    `"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null`,
    `"fuse_unk":false,"byte_fallback":false,"ignore_merges":${preKind.ignoreMerges}`,
    `"vocab":{${vocab.join(",")}}`,
    `"merges":[${pairs.join(",")}]`,
  ].join(",");
  return `${JSON.stringify(head).slice(0, -1)},"model":{${model}}}\n`;
}

/** BOS / EOS around each sequence, as transformers' own update_post_processor writes it. */
function postProcessor(tokens: readonly string[], bos: number | null, eos: number | null): object | null {
  if (bos === null && eos === null) return null;
  const special = (id: number, typeId: number) => ({ SpecialToken: { id: tokens[id]!, type_id: typeId } });
  const sequence = (name: "A" | "B", typeId: number) => [
    ...(bos !== null ? [special(bos, typeId)] : []),
    { Sequence: { id: name, type_id: typeId } },
    ...(eos !== null ? [special(eos, typeId)] : []),
  ];
  const specialTokens = Object.fromEntries([bos, eos].filter((id): id is number => id !== null).map((id) => [tokens[id]!, { id: tokens[id]!, ids: [id], tokens: [tokens[id]!] }]));
  return { type: "TemplateProcessing", single: sequence("A", 0), pair: [...sequence("A", 0), ...sequence("B", 1)], special_tokens: specialTokens };
}

/** The files of a GGUF on disk (its header only is read). */
export async function hfTokenizerFilesOfGguf(path: string, options: HfTokenizerOptions = {}): Promise<HfTokenizerFiles> {
  const header = await readGgufHeader(path);
  return hfTokenizerFiles(header.metadata, options);
}

/**
 * The files per model file, made once: keyed by path, size and modification time, so a file
 * replaced in place is read again. At most `limit` files are kept (a catalog is a few models).
 */
export class HfTokenizerFileCache {
  private readonly entries = new Map<string, Promise<HfTokenizerFiles>>();

  constructor(private readonly limit = 16) {}

  async get(path: string): Promise<HfTokenizerFiles> {
    const info = await stat(path);
    const key = `${path}\u0000${info.size}\u0000${info.mtimeMs}`;
    let files = this.entries.get(key);
    if (files) {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, files);
      return files;
    }
    files = hfTokenizerFilesOfGguf(path);
    this.entries.set(key, files);
    files.catch(() => this.entries.delete(key));
    for (const old of this.entries.keys()) {
      if (this.entries.size <= this.limit) break;
      this.entries.delete(old);
    }
    return files;
  }
}
