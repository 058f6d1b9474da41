// The checks of a legacy completion request that the proto cannot state (the prompt's shapes are
// read in plan.ts, readPrompts): `model` is named, and the options this engine cannot honour are
// refused with a 400 naming the field.
import type { CompletionRequest } from "../../../gen/srl/v1/inference_pb.js";
import { badRequest } from "../../core/errors.js";

export function requireModel(request: Pick<CompletionRequest, "model">): string {
  if (!request.model) throw badRequest("model is required");
  return request.model;
}

/** Once the model is resolved and structured outputs are read, before the shared options are planned. */
export function checkCompletionOptions(request: CompletionRequest): void {
  if (request.suffix) throw badRequest("suffix: fill-in-the-middle is not supported by the served models; put the whole text in prompt");
  const n = request.n ?? 1;
  if (request.bestOf !== undefined && request.bestOf !== n) throw badRequest(`best_of: only best_of equal to n (${n}) is served; sample n choices and rank them by their logprobs instead`);
  const maxTokens = request.maxTokens ?? 16;
  if (maxTokens === 0 && !(request.echo ?? false)) throw badRequest("max_tokens: 0 is allowed only with echo: true (scoring the prompt); ask for at least 1 token");
}
