// The Messages endpoint (`POST /v1/messages`), unary and streamed: the request converted to the
// chat completion it means (request.ts) and run through the chat pipeline itself (its checks, model
// resolution, tools, grammar and reasoning), the result converted back to Anthropic's shapes.
import { create, fromJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { ChatCompletionChunkSchema, ChatCompletionRequestSchema, ChatCompletionSchema } from "../../../gen/srl/v1/inference_pb.js";
import type { AnthropicMessageSchema, CreateMessageRequest, MessageStreamEventSchema } from "../../../gen/srl/v1/messages_pb.js";
import type { ChatCompletions } from "../chat/chat-completions.js";
import type { EndpointCall } from "../generation/endpoint-call.js";
import { chatRequestJson } from "./request.js";
import { anthropicMessage, type MessageExtras } from "./response.js";
import { anthropicEvents } from "./stream.js";

export class MessagesEndpoint {
  constructor(private readonly chat: ChatCompletions) {}

  async create(request: CreateMessageRequest, call: EndpointCall): Promise<MessageInitShape<typeof AnthropicMessageSchema>> {
    const { chatRequest, chatCall, extras } = this.convert(request, call);
    const completion = create(ChatCompletionSchema, await this.chat.create(chatRequest, chatCall));
    return anthropicMessage(completion, extras);
  }

  async *stream(request: CreateMessageRequest, call: EndpointCall): AsyncGenerator<MessageInitShape<typeof MessageStreamEventSchema>> {
    const { chatRequest, chatCall, extras } = this.convert(request, call);
    const chunks = this.chat.stream(chatRequest, chatCall);
    async function* messages() {
      for await (const chunk of chunks) yield create(ChatCompletionChunkSchema, chunk);
    }
    yield* anthropicEvents(messages(), extras);
  }

  private convert(request: CreateMessageRequest, call: EndpointCall) {
    const sent: JsonObject = chatRequestJson(request, call.sent());
    const chatRequest = fromJson(ChatCompletionRequestSchema, sent);
    // Chat reads the converted request as the one sent: its checks name chat's fields, which
    // match the Messages API's where they mean the same.
    const chatCall: EndpointCall = { ...call, sent: () => sent };
    const extras: MessageExtras = { model: request.model, stopSequences: request.stopSequences, returnTokenIds: request.returnTokenIds ?? false, logprobs: request.logprobs ?? false };
    return { chatRequest, chatCall, extras };
  }
}
