// A prompt that cannot fit the context is refused before it is tokenized: tokenizing is
// synchronous native work in the engine process (about 1 µs a byte on SmolLM2), so a long prompt
// would hold every tenant's generations while it runs. No token of a vocabulary covers more bytes
// of text than its longest one, so text bytes / that length is a lower bound of the token count.
import type { LlamaModel, Token } from "node-llama-cpp";
import type { GenerateRequest } from "../protocol.js";
import { EngineRequestError } from "./errors.js";
import { tokenBytes, vocabSize } from "./model-info.js";

/**
 * Tokenizers whose tokens cover exactly the text bytes they spell (tokenBytes): byte-level BPE,
 * SentencePiece (a space is one "▁"), WordPiece. Others (T5's Unigram, ...) may normalize the
 * text first, so a token could stand for more bytes than its own: no bound is drawn for them.
 */
const EXACT_PIECES = new Set(["gpt2", "llama", "bert"]);

const longestCache = new WeakMap<LlamaModel, number | null>();

/** The most bytes one token of the model's vocabulary covers, found once per model; null: no safe bound. */
export function longestTokenBytes(model: LlamaModel): number | null {
  if (longestCache.has(model)) return longestCache.get(model) ?? null;
  const kind = (model.fileInfo.metadata as { tokenizer?: { ggml?: { model?: string } } }).tokenizer?.ggml?.model;
  let longest: number | null = null;
  if (kind !== undefined && EXACT_PIECES.has(kind)) {
    longest = 1;
    for (let id = 0; id < vocabSize(model); id++) longest = Math.max(longest, tokenBytes(model, id as Token).length);
  }
  longestCache.set(model, longest);
  return longest;
}

/**
 * Refuses a prompt whose text alone needs at least the whole context, with the same 400 as a
 * prompt found too long after tokenizing. With truncate_prompt_tokens the prompt's end is kept
 * whatever its length, so only MAX_PROMPT_BYTES (checked at the gateway) bounds it.
 */
export function refuseUnfittable(model: LlamaModel, text: string, request: Pick<GenerateRequest, "truncatePromptTokens">, contextSize: number): void {
  if (request.truncatePromptTokens !== null) return;
  // Cheap first: a text of n UTF-16 units has at most 3n UTF-8 bytes.
  if (text.length * 3 < contextSize) return;
  const longest = longestTokenBytes(model);
  if (longest === null) return;
  const bytes = Buffer.byteLength(text, "utf8");
  const atLeast = Math.ceil(bytes / longest);
  if (atLeast < contextSize) return;
  throw new EngineRequestError(
    "bad_request",
    `the prompt has at least ${atLeast} tokens (${bytes} bytes of text; no token of this model covers more than ${longest} bytes); this model's context holds ${contextSize} here (truncate_prompt_tokens can shorten it)`,
  );
}
