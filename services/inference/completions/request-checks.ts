// The checks of a legacy completion request that the proto cannot state (the prompt's shapes are
// read in plan.ts, readPrompts): `model` is named, and the options this engine cannot honour are
// refused with a 400 naming the field.
import type { CompletionRequest } from "../../../gen/srl/v1/inference_pb.js";
import { badRequest, validationError } from "../../core/errors.js";
import { checkPromptBytes, type RequestLimits } from "../generation/request-bounds.js";
import type { GenerateRequest } from "../engine/protocol.js";

type RawPrompt = NonNullable<GenerateRequest["rawPrompt"]>;

/** Choices in one response (prompts x n): each has its own state while the response is built. */
export const MAX_CHOICES = 1024;

/** A token id counts as this many bytes of prompt (MAX_PROMPT_BYTES): 4 bytes per id is int32's size. */
export const TOKEN_ID_BYTES = 4;

export function requireModel(request: Pick<CompletionRequest, "model">): string {
  if (!request.model) throw badRequest("model is required");
  return request.model;
}

/**
 * The prompts' size before the model is resolved: their text (token ids at TOKEN_ID_BYTES each)
 * within MAX_PROMPT_BYTES, and prompts x n within MAX_CHOICES.
 */
export function checkPromptList(prompts: RawPrompt[], n: number, limits: RequestLimits): void {
  let bytes = 0;
  for (const prompt of prompts) {
    bytes += "text" in prompt ? Buffer.byteLength(prompt.text, "utf8") : prompt.tokenIds.length * TOKEN_ID_BYTES;
    if (bytes > limits.maxPromptBytes) break;
  }
  checkPromptBytes(bytes, "prompt", limits);
  if (prompts.length * n > MAX_CHOICES) {
    throw validationError([
      {
        type: "too_long",
        loc: ["body", "prompt"],
        msg: `A request should have at most ${MAX_CHOICES} choices (prompts x n), not ${prompts.length} x ${n}`,
        input: `<${prompts.length} prompts>`,
        ctx: { field_type: "Choices", max_length: MAX_CHOICES, actual_length: prompts.length * n },
      },
    ]);
  }
}

/** Once the model is resolved and structured outputs are read, before the shared options are planned. */
export function checkCompletionOptions(request: CompletionRequest): void {
  if (request.suffix) throw badRequest("suffix: fill-in-the-middle is not supported by the served models; put the whole text in prompt");
  const n = request.n ?? 1;
  if (request.bestOf !== undefined && request.bestOf !== n) throw badRequest(`best_of: only best_of equal to n (${n}) is served; sample n choices and rank them by their logprobs instead`);
  const maxTokens = request.maxTokens ?? 16;
  if (maxTokens === 0 && !(request.echo ?? false)) throw badRequest("max_tokens: 0 is allowed only with echo: true (scoring the prompt); ask for at least 1 token");
}
