// The Messages service's RPC handlers (Anthropic's Messages API), over the chat completions
// endpoint of the Inference service.
import { CreateMessageRequestSchema, Messages } from "../../../gen/srl/v1/messages_pb.js";
import { defineHandlers } from "../../core/rpc/index.js";
import { endpointCallOf } from "../endpoint-call-of.js";
import type { InferenceEngine } from "../engine/inference-engine.js";
import { ChatCompletions } from "../chat/chat-completions.js";
import type { RequestLimits } from "../generation/request-bounds.js";
import type { ModelResolver } from "../generation/resolve-model.js";
import { MessagesEndpoint } from "./messages.js";

export function messagesHandlers(deps: { engine: InferenceEngine; resolver: ModelResolver; limits: RequestLimits }) {
  const endpoint = new MessagesEndpoint(new ChatCompletions(deps));
  return defineHandlers(Messages, {
    async createMessage(request, context) {
      return endpoint.create(request, endpointCallOf(context, CreateMessageRequestSchema, request));
    },
    async *streamMessage(request, context) {
      yield* endpoint.stream(request, endpointCallOf(context, CreateMessageRequestSchema, request));
    },
  });
}
