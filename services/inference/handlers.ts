// Inference service: OpenAI-compatible chat completions and legacy completions on base models and
// on registered models' checkpoints, unary and streamed, and the model listing that names them.
// Each RPC hands its request to its endpoint: chat/, completions/, models/.
import { ChatCompletionRequestSchema, CompletionRequestSchema, Inference } from "../../gen/srl/v1/inference_pb.js";
import { defineHandlers, principalOf } from "../core/rpc/index.js";
import { endpointCallOf } from "./endpoint-call-of.js";
import type { BaseModelCatalog, Checkpoints, ModelRegistry } from "../models/index.js";
import type { InferenceEngine } from "./engine/inference-engine.js";
import { ChatCompletions } from "./chat/chat-completions.js";
import { Completions } from "./completions/completions.js";
import type { RequestLimits } from "./generation/request-bounds.js";
import type { ModelResolver } from "./generation/resolve-model.js";
import { ServedModels } from "./models/served-models.js";

export function inferenceHandlers(deps: { engine: InferenceEngine; resolver: ModelResolver; catalog: BaseModelCatalog; registry: ModelRegistry; checkpoints: Checkpoints; limits: RequestLimits }) {
  const chat = new ChatCompletions(deps);
  const completions = new Completions(deps);
  const served = new ServedModels(deps);

  return defineHandlers(Inference, {
    async createChatCompletion(request, context) {
      return chat.create(request, endpointCallOf(context, ChatCompletionRequestSchema, request));
    },
    async *streamChatCompletion(request, context) {
      yield* chat.stream(request, endpointCallOf(context, ChatCompletionRequestSchema, request));
    },
    async createCompletion(request, context) {
      return completions.create(request, endpointCallOf(context, CompletionRequestSchema, request));
    },
    async *streamCompletion(request, context) {
      yield* completions.stream(request, endpointCallOf(context, CompletionRequestSchema, request));
    },
    async listServedModels(request, context) {
      return { object: "list", data: await served.list(principalOf(context).entity, request.includeSteps ?? false) };
    },
    async getServedModel(request, context) {
      return served.get(principalOf(context).entity, request.model);
    },
  });
}
