// A legacy completion request -> one engine request per prompt. `prompt` is a string, a list of
// strings, a list of token ids or a list of such lists (OpenAI's and vLLM's forms); every prompt
// runs with the same options and its `n` choices are numbered prompt x n + choice.
import { type JsonValue, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { CompletionRequest } from "../../../gen/srl/v1/inference_pb.js";
import { validationError } from "../../core/errors.js";
import type { GenerateRequest } from "../engine/protocol.js";
import type { ServeTarget } from "../generation/resolve-model.js";
import { planShared } from "../generation/shared-plan.js";
import { checkCompletionOptions } from "./request-checks.js";

/** Prompts in one request: each is its own engine request, a few at a time (prompt-runner.ts). */
export const MAX_PROMPTS = 1024;

export type RawPrompt = NonNullable<GenerateRequest["rawPrompt"]>;

export function readPrompts(request: CompletionRequest): RawPrompt[] {
  const value: JsonValue = request.prompt ? toJson(ValueSchema, request.prompt) : null;
  const invalid = (msg: string) =>
    validationError([{ type: "prompt_type", loc: ["body", "prompt"], msg, input: Array.isArray(value) ? `[${value.length} items]` : value }]);
  const shape = "Input should be a string, a list of strings, a list of token ids or a list of lists of token ids";
  const isTokenId = (item: JsonValue) => typeof item === "number" && Number.isInteger(item) && item >= 0;
  if (typeof value === "string") return [{ text: value }];
  if (!Array.isArray(value)) throw invalid(shape);
  if (value.length === 0) throw invalid("the prompt list is empty");
  let prompts: RawPrompt[];
  if (value.every((item) => typeof item === "string")) prompts = value.map((text) => ({ text: text as string }));
  else if (value.every(isTokenId)) prompts = [{ tokenIds: value as number[] }];
  else if (value.every((item) => Array.isArray(item) && item.every(isTokenId))) {
    if (value.some((item) => (item as JsonValue[]).length === 0)) throw invalid("a prompt of token ids is empty");
    prompts = value.map((item) => ({ tokenIds: item as number[] }));
  } else throw invalid(shape);
  if (prompts.length > MAX_PROMPTS) throw invalid(`at most ${MAX_PROMPTS} prompts per request (got ${prompts.length})`);
  return prompts;
}

export function planCompletion(request: CompletionRequest, target: ServeTarget, streaming: boolean, grammar: string | null): Omit<GenerateRequest, "id" | "rawPrompt"> {
  checkCompletionOptions(request);
  const echo = request.echo ?? false;
  const maxTokens = request.maxTokens ?? 16;
  const logprobs = request.logprobs ?? null;
  // Echoed log-probabilities are the prompt's: computed by the engine's prompt_logprobs pass.
  const promptLogprobs = Math.max(request.promptLogprobs ?? -1, echo && logprobs !== null ? logprobs : -1);
  return {
    ...planShared(request, target, streaming, grammar, maxTokens),
    promptLogprobs: promptLogprobs >= 0 ? promptLogprobs : null,
    messages: [],
    tools: null,
    documents: null,
    chatTemplate: null,
    chatTemplateKwargs: {},
    addGenerationPrompt: false,
    continueFinalMessage: false,
    echo,
    // vLLM lists every generated token, the one that ends the choice included (an end-of-sequence
    // token or a stop_token_ids one: its id, log-probability and count, not its text). lm-eval drops
    // the last entry of an echoed max_tokens 1 completion as the generated token, so leaving an
    // end token out would drop a prompt token instead.
    includeStopToken: true,
    addSpecialTokens: request.addSpecialTokens ?? true,
    logprobs: logprobs !== null,
    topLogprobs: logprobs ?? 0,
  };
}
