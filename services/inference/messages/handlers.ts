// The Messages service's RPC handlers (Anthropic's Messages API), over the chat completions
// endpoint of the Inference service.
import type { HandlerContext } from "@connectrpc/connect";
import { CreateMessageRequestSchema, Messages, type CreateMessageRequest } from "../../../gen/srl/v1/messages_pb.js";
import { defineHandlers, principalOf, sentJson } from "../../core/rpc/index.js";
import type { InferenceEngine } from "../engine/inference-engine.js";
import { ChatCompletions } from "../chat/chat-completions.js";
import type { EndpointCall } from "../generation/endpoint-call.js";
import type { RequestLimits } from "../generation/request-bounds.js";
import type { ModelResolver } from "../generation/resolve-model.js";
import { MessagesEndpoint } from "./messages.js";

export function messagesHandlers(deps: { engine: InferenceEngine; resolver: ModelResolver; limits: RequestLimits }) {
  const endpoint = new MessagesEndpoint(new ChatCompletions(deps));
  const callOf = (context: HandlerContext, request: CreateMessageRequest): EndpointCall => ({
    entity: () => principalOf(context).entity,
    sent: () => sentJson(context, CreateMessageRequestSchema, request),
    setHeader: (name, value) => context.responseHeader.set(name, value),
    signal: context.signal,
  });
  return defineHandlers(Messages, {
    async createMessage(request, context) {
      return endpoint.create(request, callOf(context, request));
    },
    async *streamMessage(request, context) {
      yield* endpoint.stream(request, callOf(context, request));
    },
  });
}
