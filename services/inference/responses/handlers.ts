// The Responses service's RPC handlers (OpenAI's `/v1/responses`), over the chat endpoint and the
// stored responses collection.
import { CreateResponseRequestSchema, Responses } from "../../../gen/srl/v1/responses_pb.js";
import { defineHandlers, principalOf } from "../../core/rpc/index.js";
import { endpointCallOf } from "../endpoint-call-of.js";
import { ChatCompletions } from "../chat/chat-completions.js";
import type { InferenceEngine } from "../engine/inference-engine.js";
import type { RequestLimits } from "../generation/request-bounds.js";
import type { ModelResolver } from "../generation/resolve-model.js";
import { ResponsesEndpoint } from "./responses.js";
import type { StoredResponses } from "./stored-responses.js";

export function responsesHandlers(deps: { engine: InferenceEngine; resolver: ModelResolver; limits: RequestLimits; store: StoredResponses }) {
  const endpoint = new ResponsesEndpoint({ chat: new ChatCompletions(deps), store: deps.store });
  return defineHandlers(Responses, {
    async createResponse(request, context) {
      return endpoint.create(request, endpointCallOf(context, CreateResponseRequestSchema, request));
    },
    async *streamResponse(request, context) {
      yield* endpoint.stream(request, endpointCallOf(context, CreateResponseRequestSchema, request));
    },
    async getResponse(request, context) {
      return endpoint.get(principalOf(context).entity, request.responseId);
    },
    async deleteResponse(request, context) {
      return endpoint.delete(principalOf(context).entity, request.responseId);
    },
    async listResponseInputItems(request, context) {
      return endpoint.inputItems(principalOf(context).entity, request.responseId);
    },
  });
}
