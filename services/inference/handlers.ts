// Inference service: OpenAI-compatible chat completions and legacy completions on base models and
// on registered models' checkpoints, unary and streamed, and the model listing that names them.
// Each RPC hands its request to its endpoint: chat/, completions/, models/.
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { ChatCompletionRequestSchema, CompletionRequestSchema, Inference } from "../../gen/srl/v1/inference_pb.js";
import { defineHandlers, principalOf, sentJson } from "../core/rpc/index.js";
import type { BaseModelCatalog, Checkpoints, ModelRegistry } from "../models/index.js";
import type { InferenceEngine } from "./engine/inference-engine.js";
import { ChatCompletions } from "./chat/chat-completions.js";
import { Completions } from "./completions/completions.js";
import type { EndpointCall } from "./generation/endpoint-call.js";
import type { RequestLimits } from "./generation/request-bounds.js";
import type { ModelResolver } from "./generation/resolve-model.js";
import { ServedModels } from "./models/served-models.js";

export function inferenceHandlers(deps: { engine: InferenceEngine; resolver: ModelResolver; catalog: BaseModelCatalog; registry: ModelRegistry; checkpoints: Checkpoints; limits: RequestLimits }) {
  const chat = new ChatCompletions(deps);
  const completions = new Completions(deps);
  const served = new ServedModels(deps);

  /** What an endpoint reads of the call; the caller and the body as sent are read when it gets to them. */
  const callOf = <Desc extends DescMessage>(context: HandlerContext, schema: Desc, request: MessageShape<Desc>): EndpointCall => ({
    entity: () => principalOf(context).entity,
    sent: () => sentJson(context, schema, request),
    setHeader: (name, value) => context.responseHeader.set(name, value),
    signal: context.signal,
  });

  return defineHandlers(Inference, {
    async createChatCompletion(request, context) {
      return chat.create(request, callOf(context, ChatCompletionRequestSchema, request));
    },
    async *streamChatCompletion(request, context) {
      yield* chat.stream(request, callOf(context, ChatCompletionRequestSchema, request));
    },
    async createCompletion(request, context) {
      return completions.create(request, callOf(context, CompletionRequestSchema, request));
    },
    async *streamCompletion(request, context) {
      yield* completions.stream(request, callOf(context, CompletionRequestSchema, request));
    },
    async listServedModels(request, context) {
      return { object: "list", data: await served.list(principalOf(context).entity, request.includeSteps ?? false) };
    },
    async getServedModel(request, context) {
      return served.get(principalOf(context).entity, request.model);
    },
  });
}
