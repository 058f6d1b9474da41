// Facts about a loaded model read from its GGUF metadata.
import type { LlamaModel, Token } from "node-llama-cpp";
import { UNICODE_TO_BYTE } from "../../../weights/index.js";

/** The GGUF `tokenizer.*` metadata node-llama-cpp parsed from the file. */
function tokenizerMetadata(model: LlamaModel) {
  type Tokenizer = { chat_template?: unknown; ggml?: { model?: string; tokens?: readonly string[]; token_type?: readonly number[] } };
  return (model.fileInfo.metadata as { tokenizer?: Tokenizer }).tokenizer;
}

/** The vocabulary's token texts (`tokenizer.ggml.tokens`), null when the file has none. */
export function vocabTokens(model: LlamaModel): readonly string[] | null {
  return tokenizerMetadata(model)?.ggml?.tokens ?? null;
}

export function vocabSize(model: LlamaModel): number {
  const tokens = vocabTokens(model);
  if (!tokens) throw new Error("the model file has no tokenizer.ggml.tokens");
  return tokens.length;
}

/**
 * A text prompt's tokens as the completions endpoint and vLLM's tokenizer call take it: special-token
 * text recognised, BOS prepended where the tokenizer adds one and add_special_tokens asks for it.
 * The trainer tokenizes captured legacy completions the same way.
 */
export function textPromptTokens(model: LlamaModel, text: string, addSpecialTokens: boolean): Token[] {
  const tokens = model.tokenize(text, true);
  const bos = model.tokens.bos;
  return addSpecialTokens && model.tokens.shouldPrependBosToken && bos !== null && tokens[0] !== bos ? [bos, ...tokens] : tokens;
}

export function chatTemplateOf(model: LlamaModel): string | null {
  const template = tokenizerMetadata(model)?.chat_template;
  return typeof template === "string" && template.length > 0 ? template : null;
}

/**
 * Single-byte tokens that can only start an overlong or out-of-range UTF-8 sequence (C0, C1, E0,
 * F0, F5-FF). Under a grammar they are banned: llama.cpp's grammar tracks partial UTF-8 in a way
 * that cannot tell an overlong E0 8A A2 from the valid CA A2, so without the ban a byte-level model
 * can write text that decodes to U+FFFD (measured on the tiny model: 2 samples in 100). E0 and F0
 * also start some valid characters; models that need those spell them with merged tokens.
 */
export function overlongLeadByteTokens(model: LlamaModel): number[] {
  let found = overlongCache.get(model);
  if (!found) overlongCache.set(model, (found = findOverlongLeadByteTokens(model)));
  return found;
}

// Per loaded model: the scan covers the whole vocabulary, and grammars come with many requests.
const overlongCache = new WeakMap<LlamaModel, number[]>();

function findOverlongLeadByteTokens(model: LlamaModel): number[] {
  const banned = new Set([0xc0, 0xc1, 0xe0, 0xf0, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff]);
  const tokenizer = tokenizerMetadata(model)?.ggml;
  const tokens = tokenizer?.tokens ?? [];
  const out: number[] = [];
  tokens.forEach((text, id) => {
    // SentencePiece-style vocabularies spell byte tokens <0xXX>; GPT-2-style byte-level BPE maps
    // bytes 0xA1-0xFF (except 0xAD) to the same code point, which covers every banned byte.
    const sentencePiece = /^<0x([0-9A-Fa-f]{2})>$/.exec(text);
    const byte = sentencePiece?.[1] ? parseInt(sentencePiece[1], 16) : tokenizer?.model === "gpt2" && text.length === 1 ? text.charCodeAt(0) : -1;
    if (banned.has(byte)) out.push(id);
  });
  return out;
}

/** The vocabulary's end-of-generation tokens (EOS, EOT, <|im_end|>, ...), found once per model. */
export function endOfGenerationTokens(model: LlamaModel): Token[] {
  let found = endTokenCache.get(model);
  if (!found) {
    found = [];
    for (let token = 0; token < vocabSize(model); token++) if (model.isEogToken(token as Token)) found.push(token as Token);
    endTokenCache.set(model, found);
  }
  return found;
}

const endTokenCache = new WeakMap<LlamaModel, Token[]>();

/**
 * A token's own bytes, as logprobs' `bytes` report them: for a token holding part of a UTF-8
 * character, its raw bytes (decoding it alone would give U+FFFD). Byte-level BPE vocabularies
 * spell bytes with GPT-2's byte-to-unicode map, SentencePiece ones as <0xXX> and "▁" for a space;
 * control tokens are their text.
 */
export function tokenBytes(model: LlamaModel, token: Token): number[] {
  const tokenizer = tokenizerMetadata(model)?.ggml;
  const piece = tokenizer?.tokens?.[token];
  const utf8 = (text: string) => [...Buffer.from(text, "utf8")];
  if (piece === undefined || tokenizer?.token_type?.[token] === 3) return utf8(model.detokenize([token], true));
  if (tokenizer?.model === "gpt2") {
    const bytes: number[] = [];
    for (const char of piece) {
      const byte = UNICODE_TO_BYTE.get(char);
      if (byte === undefined) return utf8(piece); // user-defined tokens are stored as plain text
      bytes.push(byte);
    }
    return bytes;
  }
  const byteToken = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
  if (byteToken?.[1]) return [parseInt(byteToken[1], 16)];
  return utf8(tokenizer?.model === "llama" ? piece.replaceAll("\u2581", " ") : piece);
}
