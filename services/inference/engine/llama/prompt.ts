// Messages -> prompt tokens: the request's chat template, else the model's, rendered with
// @huggingface/jinja (the same engine family as transformers' templates), then tokenized with
// special tokens recognised. continue_final_message leaves the last message open so the model
// continues it.
import { Template } from "@huggingface/jinja";
import type { LlamaModel, Token } from "node-llama-cpp";
import type { GenerateRequest } from "../protocol.js";
import { EngineRequestError } from "./errors.js";
import { chatTemplateOf } from "./model-info.js";

export interface Prompt {
  text: string;
  tokens: Token[];
  /** With echo: the last message's content when it is the assistant's (prepended to the output). */
  echoText: string | null;
}

export function buildPrompt(model: LlamaModel, request: GenerateRequest, contextSize: number): Prompt {
  const source = request.chatTemplate ?? chatTemplateOf(model);
  if (!source) {
    throw new EngineRequestError("bad_request", "this model's tokenizer defines no chat template; pass chat_template with the request");
  }
  let template: Template;
  try {
    template = new Template(source);
  } catch (error) {
    throw new EngineRequestError("bad_request", `chat_template does not parse: ${messageOf(error)}`);
  }
  const last = request.messages[request.messages.length - 1];
  let text: string;
  try {
    text = template.render({
      ...request.chatTemplateKwargs,
      messages: request.messages,
      tools: request.tools ?? undefined,
      documents: request.documents ?? undefined,
      add_generation_prompt: request.addGenerationPrompt,
      bos_token: model.tokens.bosString ?? "",
      eos_token: model.tokens.eosString ?? "",
    });
  } catch (error) {
    throw new EngineRequestError("bad_request", `the chat template failed to render these messages: ${messageOf(error)}`);
  }
  if (request.continueFinalMessage) text = openFinalMessage(text, last);
  let tokens = model.tokenize(text, true);
  if (request.addSpecialTokens && model.tokens.bos !== null && tokens[0] !== model.tokens.bos) tokens = [model.tokens.bos, ...tokens];
  const keep = request.truncatePromptTokens === null ? null : request.truncatePromptTokens === -1 ? contextSize - 1 : request.truncatePromptTokens;
  if (keep !== null && tokens.length > keep) tokens = tokens.slice(tokens.length - keep);
  if (tokens.length === 0) throw new EngineRequestError("bad_request", "the prompt is empty");
  if (tokens.length >= contextSize) {
    throw new EngineRequestError("bad_request", `the prompt has ${tokens.length} tokens; this deployment's context holds ${contextSize} (truncate_prompt_tokens can shorten it)`);
  }
  const echoText = request.echo && last?.role === "assistant" && typeof last.content === "string" ? last.content : null;
  return { text, tokens, echoText };
}

/** Cuts the rendered text right after the final message's content (dropping its end-of-turn). */
function openFinalMessage(text: string, last: GenerateRequest["messages"][number] | undefined): string {
  const content = typeof last?.content === "string" ? last.content : "";
  const at = content ? text.lastIndexOf(content) : -1;
  if (at < 0) throw new EngineRequestError("bad_request", "continue_final_message: the final message's content does not appear in the rendered prompt");
  return text.slice(0, at + content.length);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
