// vLLM's tokenizer calls answered with the base model's own llama.cpp vocabulary: the tokens a
// completion of the same text would run on, and the texts its generated tokens would give.
import type { LlamaModel, Token } from "node-llama-cpp";
import type { TokenizerAnswer, TokenizerFacts, TokenizerOp } from "../protocol.js";
import { EngineRequestError } from "./errors.js";
import { chatTemplateOf, textPromptTokens, vocabSize, vocabTokens } from "./model-info.js";

export function answerTokenizerOp(model: LlamaModel, op: TokenizerOp): TokenizerAnswer {
  switch (op.kind) {
    case "tokenize": {
      // An empty text is no tokens (vLLM answers [] too); the native tokenizer is not asked.
      const tokens = op.text === "" ? [] : textPromptTokens(model, op.text, op.addSpecialTokens);
      return { kind: "tokenize", tokens, pieces: piecesOf(model, tokens) };
    }
    case "detokenize":
      // Special tokens keep their text, as transformers' decode() does by default.
      return { kind: "detokenize", text: model.detokenize(checked(model, op.tokens), true) };
    case "pieces":
      return { kind: "pieces", pieces: piecesOf(model, checked(model, op.tokens)) };
    case "info":
      return { kind: "info", info: factsOf(model) };
  }
}

function checked(model: LlamaModel, tokens: number[]): Token[] {
  const size = vocabSize(model);
  const bad = tokens.find((id) => !Number.isInteger(id) || id < 0 || id >= size);
  if (bad !== undefined) throw new EngineRequestError("bad_request", `tokens: token id ${bad} is outside this model's vocabulary (0-${size - 1})`);
  return tokens as Token[];
}

function piecesOf(model: LlamaModel, tokens: readonly Token[]): string[] {
  const vocab = vocabTokens(model);
  return tokens.map((token) => vocab?.[token] ?? model.detokenize([token], true));
}

function factsOf(model: LlamaModel): TokenizerFacts {
  const ggml = (model.fileInfo.metadata as { tokenizer?: { ggml?: Record<string, unknown> } }).tokenizer?.ggml ?? {};
  const vocab = vocabTokens(model) ?? [];
  const special = (id: unknown) => (typeof id === "number" && Number.isInteger(id) && id >= 0 && id < vocab.length ? { id, text: vocab[id] as string } : null);
  return {
    vocabSize: vocabSize(model),
    bos: special(model.tokens.bos),
    eos: special(model.tokens.eos),
    unk: special(ggml.unknown_token_id),
    pad: special(ggml.padding_token_id),
    addBos: model.tokens.shouldPrependBosToken,
    chatTemplate: chatTemplateOf(model),
    trainContextSize: model.trainContextSize,
  };
}
