// Facts about a loaded model read from its GGUF metadata.
import type { LlamaModel } from "node-llama-cpp";

export function vocabSize(model: LlamaModel): number {
  const tokens = (model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: readonly string[] } } }).tokenizer?.ggml?.tokens;
  if (!tokens) throw new Error("the model file has no tokenizer.ggml.tokens");
  return tokens.length;
}

export function chatTemplateOf(model: LlamaModel): string | null {
  const template = (model.fileInfo.metadata as { tokenizer?: { chat_template?: unknown } }).tokenizer?.chat_template;
  return typeof template === "string" && template.length > 0 ? template : null;
}
