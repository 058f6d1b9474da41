// Messages -> prompt tokens: the request's chat template, else the model's, rendered with
// @huggingface/jinja (the same engine family as transformers' templates), then tokenized with
// special tokens recognised. continue_final_message leaves the last message open so the model
// continues it.
import { Template } from "@huggingface/jinja";
import type { LlamaModel, Token } from "node-llama-cpp";
import type { GenerateRequest } from "../protocol.js";
import { EngineRequestError } from "./errors.js";
import { chatTemplateOf, textPromptTokens, vocabSize } from "./model-info.js";
import { refuseUnfittable } from "./prompt-bound.js";

export interface Prompt {
  text: string;
  tokens: Token[];
  /** With echo: the last message's content when it is the assistant's (prepended to the output). */
  echoText: string | null;
}

export function buildPrompt(model: LlamaModel, request: GenerateRequest, contextSize: number): Prompt {
  if (request.rawPrompt) return rawPrompt(model, request, request.rawPrompt, contextSize);
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
  const render = (tools: GenerateRequest["tools"]) => {
    try {
      return template.render({
        ...request.chatTemplateKwargs,
        messages: request.messages,
        tools: tools ?? undefined,
        documents: request.documents ?? undefined,
        add_generation_prompt: request.addGenerationPrompt,
        bos_token: model.tokens.bosString ?? "",
        eos_token: model.tokens.eosString ?? "",
      });
    } catch (error) {
      throw new EngineRequestError("bad_request", `the chat template failed to render these messages: ${messageOf(error)}`);
    }
  };
  let text = render(request.tools);
  // A template that fails without tools surely reads them.
  const renderWithoutTools = () => {
    try {
      return render(null);
    } catch {
      return null;
    }
  };
  // Tools the template leaves out of the prompt would be dropped silently: the model never sees
  // them. Refused instead (README: chat completions).
  if (request.tools && request.tools.length > 0 && text === renderWithoutTools()) {
    throw new EngineRequestError(
      "bad_request",
      `tools: the chat template of ${request.base.name}${request.chatTemplate ? " given in chat_template" : ""} does not render tools, so the model would never see them; pass a chat_template that renders \`tools\`, or call without tools`,
    );
  }
  if (request.continueFinalMessage) text = openFinalMessage(text, last);
  refuseUnfittable(model, text, request, contextSize);
  let tokens = model.tokenize(text, true);
  if (request.addSpecialTokens && model.tokens.bos !== null && tokens[0] !== model.tokens.bos) tokens = [model.tokens.bos, ...tokens];
  tokens = fitContext(tokens, request, contextSize);
  const echoText = request.echo && last?.role === "assistant" && typeof last.content === "string" ? last.content : null;
  return { text, tokens, echoText };
}

/**
 * A legacy completion's prompt as given: text tokenized with special tokens recognised (plus BOS
 * where the tokenizer adds one and add_special_tokens asks for it, as vLLM's tokenizer call does),
 * or token ids checked against the vocabulary. With echo the prompt's text is the echo.
 */
function rawPrompt(model: LlamaModel, request: GenerateRequest, prompt: { text: string } | { tokenIds: number[] }, contextSize: number): Prompt {
  let tokens: Token[];
  if ("text" in prompt) {
    refuseUnfittable(model, prompt.text, request, contextSize);
    tokens = textPromptTokens(model, prompt.text, request.addSpecialTokens);
  } else {
    const size = vocabSize(model);
    const bad = prompt.tokenIds.find((id) => !Number.isInteger(id) || id < 0 || id >= size);
    if (bad !== undefined) throw new EngineRequestError("bad_request", `prompt: token id ${bad} is outside this model's vocabulary (0-${size - 1})`);
    tokens = prompt.tokenIds as Token[];
  }
  tokens = fitContext(tokens, request, contextSize);
  const text = "text" in prompt ? prompt.text : model.detokenize(tokens, true);
  return { text, tokens, echoText: request.echo ? text : null };
}

/** truncate_prompt_tokens keeps the prompt's end; a prompt that still leaves no room is refused. */
function fitContext(prompt: Token[], request: GenerateRequest, contextSize: number): Token[] {
  let tokens = prompt;
  const keep = request.truncatePromptTokens === null ? null : request.truncatePromptTokens === -1 ? contextSize - 1 : request.truncatePromptTokens;
  if (keep !== null && tokens.length > keep) tokens = tokens.slice(tokens.length - keep);
  if (tokens.length === 0) throw new EngineRequestError("bad_request", "the prompt is empty");
  if (tokens.length >= contextSize) {
    throw new EngineRequestError("bad_request", `the prompt has ${tokens.length} tokens; this model's context holds ${contextSize} here (truncate_prompt_tokens can shorten it)`);
  }
  return tokens;
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
