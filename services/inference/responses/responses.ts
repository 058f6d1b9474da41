// The Responses endpoint (`/v1/responses`): a response is a chat generation over the converted
// input (chat/chat-completions.ts does the checks, tools, structured outputs and sampling), read
// back as output items and typed events; stored responses are read, deleted and continued.
import { create, fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { ChatCompletionRequestSchema } from "../../../gen/srl/v1/inference_pb.js";
import { ResponseSchema, type CreateResponseRequest, type Response, type ResponseStreamEvent } from "../../../gen/srl/v1/responses_pb.js";
import { badRequest, validationError } from "../../core/errors.js";
import type { ChatCompletions } from "../chat/chat-completions.js";
import type { EndpointCall } from "../generation/endpoint-call.js";
import { ResponseAssembler, newId } from "./assembler.js";
import { chatRequest } from "./chat-request.js";
import { inputMessages, isObject } from "./input-items.js";
import type { StoredResponse, StoredResponses } from "./stored-responses.js";

export class ResponsesEndpoint {
  constructor(private readonly deps: { chat: ChatCompletions; store: StoredResponses }) {}

  async create(request: CreateResponseRequest, call: EndpointCall): Promise<Response> {
    let last: Response | undefined;
    for await (const event of this.stream(request, call)) if (event.response && event.response.status !== "in_progress") last = event.response;
    if (!last) throw new Error("the response ended without its final event");
    return last;
  }

  async *stream(request: CreateResponseRequest, call: EndpointCall): AsyncGenerator<ResponseStreamEvent> {
    const sent = call.sent();
    const entity = call.entity();
    const previous = request.previousResponseId ? await this.deps.store.getOwned(entity, request.previousResponseId) : null;
    const input = inputMessages(sent.input);
    const history = [...(previous?.conversation ?? []), ...input];
    if (history.length === 0) throw validationError([{ type: "missing", loc: ["body", "input"], msg: "Field required (or previous_response_id)", input: null }]);
    const messages = [...(request.instructions ? [{ role: "system", content: request.instructions }] : []), ...history];
    const { chat, outputLogprobs } = chatRequest(request, sent, messages, true);
    let chatRequestMessage;
    try {
      chatRequestMessage = fromJson(ChatCompletionRequestSchema, chat);
    } catch (error) {
      throw badRequest(`input: ${error instanceof Error ? error.message : String(error)}`);
    }
    const assembler = new ResponseAssembler(baseResponse(request, sent), { outputLogprobs, maxToolCalls: request.maxToolCalls ?? null });
    const chunks = this.deps.chat.stream(chatRequestMessage, { ...call, sent: () => chat })[Symbol.asyncIterator]();
    // The chat endpoint checks the request before its first chunk: a refusal is a plain error, before any event.
    let next = await chunks.next();
    yield* assembler.start();
    while (!next.done) {
      yield* assembler.push(next.value);
      next = await chunks.next();
    }
    const { events, response } = assembler.end();
    if (response.store) {
      const stored: StoredResponse = { response, inputItems: inputItems(sent.input), conversation: [...history, assembler.assistantMessage()] };
      await this.deps.store.save(entity, stored);
    }
    yield* events;
  }

  async get(entity: string, id: string): Promise<Response> {
    return (await this.deps.store.getOwned(entity, id)).response;
  }

  async delete(entity: string, id: string): Promise<{ id: string; object: string; deleted: boolean }> {
    await this.deps.store.deleteOwned(entity, id);
    return { id, object: "response", deleted: true };
  }

  async inputItems(entity: string, id: string) {
    const items = (await this.deps.store.getOwned(entity, id)).inputItems;
    const ids = items.map((item) => (typeof item.id === "string" ? item.id : null));
    return { object: "list", data: items, firstId: ids[0] ?? undefined, lastId: ids[ids.length - 1] ?? undefined, hasMore: false };
  }
}

/** What the response echoes of the request (OpenAI returns the settings it ran with). */
function baseResponse(request: CreateResponseRequest, sent: JsonObject): Response {
  const format = isObject(sent.text) && isObject(sent.text.format) ? sent.text.format : { type: "text" };
  const reasoning = isObject(sent.reasoning) ? sent.reasoning : { effort: null, summary: null };
  return create(ResponseSchema, {
    id: newId("resp"),
    object: "response",
    createdAt: BigInt(Math.floor(Date.now() / 1000)),
    status: "in_progress",
    instructions: request.instructions,
    maxOutputTokens: request.maxOutputTokens,
    model: request.model ?? "",
    parallelToolCalls: request.parallelToolCalls ?? true,
    previousResponseId: request.previousResponseId,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    store: request.store ?? true,
    temperature: request.temperature,
    text: { format, ...(isObject(sent.text) && sent.text.verbosity ? { verbosity: sent.text.verbosity } : {}) },
    toolChoice: request.toolChoice ?? fromJson(ValueSchema, "auto"),
    tools: Array.isArray(sent.tools) ? sent.tools.filter(isObject) : [],
    topP: request.topP,
    truncation: request.truncation ?? "disabled",
    metadata: request.metadata,
    topLogprobs: request.topLogprobs,
    maxToolCalls: request.maxToolCalls,
    background: false,
  });
}

/** The request's input as stored input items, each with an id (a string is one user message). */
function inputItems(input: JsonValue | undefined): JsonObject[] {
  if (typeof input === "string") return [{ id: newId("msg"), type: "message", role: "user", content: [{ type: "input_text", text: input }] }];
  if (!Array.isArray(input)) return [];
  return input.filter(isObject).map((item) => ({ id: newId(item.type === "function_call" ? "fc" : item.type === "function_call_output" ? "fco" : "msg"), ...item }));
}
