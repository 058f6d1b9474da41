// Chat completion chunks -> a Response and its typed stream events. The chat endpoint has already
// split the text into reasoning, content and tool calls (chat/reply-pipeline.ts); here each run of
// one kind becomes an output item (reasoning, message, function_call) with OpenAI's events around
// it, and every sampled token goes into `token_generations` for training.
import { randomUUID } from "node:crypto";
import { create, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import type { ChatCompletionChunkSchema, TokenLogprobSchema } from "../../../gen/srl/v1/inference_pb.js";
import { IncompleteDetailsSchema, ResponseStreamEventSchema, ResponseUsageSchema, type Response, type ResponseStreamEvent, type ResponseUsage } from "../../../gen/srl/v1/responses_pb.js";

/** A chunk as the chat endpoint yields it (an init shape: optional fields may be absent). */
export type ChatChunk = MessageInitShape<typeof ChatCompletionChunkSchema>;
type TokenLogprobInit = MessageInitShape<typeof TokenLogprobSchema>;
type EventFields = Partial<Omit<ResponseStreamEvent, "$typeName" | "sequenceNumber" | "type">> & { type: string };

type Open =
  | { kind: "reasoning"; item: JsonObject; text: string }
  | { kind: "message"; item: JsonObject; text: string; logprobs: JsonObject[] }
  | { kind: "function_call"; item: JsonObject; index: number; arguments: string };

export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replace(/-/g, "")}`;
}

export class ResponseAssembler {
  private sequence = 0;
  private readonly output: JsonObject[] = [];
  private open: Open | null = null;
  private promptIds: number[] = [];
  private readonly tokenIds: number[] = [];
  private readonly tokenLogprobs: (number | null)[] = [];
  /** Log-probabilities of tokens whose text has not come out yet (held back by the reply pipeline). */
  private pending: JsonObject[] = [];
  private finish = "stop";
  private usage: ResponseUsage | undefined;
  private readonly seenCalls = new Set<number>();

  constructor(
    private readonly base: Response,
    private readonly options: { outputLogprobs: boolean; maxToolCalls: number | null },
  ) {}

  /** response.created and response.in_progress. */
  start(): ResponseStreamEvent[] {
    const response = this.snapshot("in_progress");
    return [this.event({ type: "response.created", response }), this.event({ type: "response.in_progress", response })];
  }

  /** The events one chat chunk makes. */
  push(chunk: ChatChunk): ResponseStreamEvent[] {
    const events: ResponseStreamEvent[] = [];
    if (chunk.promptTokenIds && chunk.promptTokenIds.length > 0) this.promptIds = [...chunk.promptTokenIds];
    if (chunk.usage) {
      const u = chunk.usage;
      this.usage = create(ResponseUsageSchema, {
        inputTokens: u.promptTokens ?? 0,
        inputTokensDetails: { cachedTokens: u.promptTokensDetails?.cachedTokens ?? 0 },
        outputTokens: u.completionTokens ?? 0,
        outputTokensDetails: { reasoningTokens: 0 },
        totalTokens: u.totalTokens ?? 0,
      });
    }
    for (const choice of chunk.choices ?? []) {
      const ids = choice.tokenIds ?? [];
      const logprobs: TokenLogprobInit[] = choice.logprobs?.content ?? [];
      this.tokenIds.push(...ids);
      this.tokenLogprobs.push(...ids.map((_, i) => logprobs[i]?.logprob ?? null));
      if (this.options.outputLogprobs) this.pending.push(...logprobs.map(logprobJson));
      const delta = choice.delta;
      const reasoning = delta?.reasoning ?? delta?.reasoningContent ?? "";
      if (reasoning) events.push(...this.reasoning(reasoning));
      if (delta?.content) events.push(...this.text(delta.content));
      for (const call of delta?.toolCalls ?? []) events.push(...this.toolCall(call.index ?? 0, call.id ?? undefined, call.function?.name ?? undefined, call.function?.arguments ?? ""));
      if (choice.finishReason) this.finish = choice.finishReason;
    }
    return events;
  }

  /** Closes the last item; the final event (response.completed or response.incomplete) and the response. */
  end(): { events: ResponseStreamEvent[]; response: Response } {
    const events = this.close();
    const incomplete = this.finish === "length";
    const response = this.snapshot(incomplete ? "incomplete" : "completed");
    events.push(this.event({ type: incomplete ? "response.incomplete" : "response.completed", response }));
    return { events, response };
  }

  /** This response's assistant turn as a chat message (what previous_response_id continues from). */
  assistantMessage(): JsonObject {
    let content = "";
    let reasoning = "";
    const calls: JsonObject[] = [];
    for (const item of this.output) {
      if (item.type === "message") content += ((item.content as JsonObject[])[0]?.text as string | undefined) ?? "";
      else if (item.type === "reasoning") reasoning += ((item.content as JsonObject[])[0]?.text as string | undefined) ?? "";
      else if (item.type === "function_call") calls.push({ id: item.call_id ?? "", type: "function", function: { name: item.name ?? "", arguments: item.arguments ?? "" } });
    }
    return { role: "assistant", content: calls.length > 0 && !content ? null : content, ...(reasoning ? { reasoning_content: reasoning } : {}), ...(calls.length > 0 ? { tool_calls: calls } : {}) };
  }

  private reasoning(text: string): ResponseStreamEvent[] {
    const events: ResponseStreamEvent[] = [];
    // The reasoning's tokens are not the message's: their log-probabilities stay out of output_text.
    this.pending = [];
    if (this.open?.kind !== "reasoning") {
      events.push(...this.close());
      const item: JsonObject = { id: newId("rs"), type: "reasoning", summary: [], content: [{ type: "reasoning_text", text: "" }], status: "in_progress" };
      this.open = { kind: "reasoning", item, text: "" };
      events.push(this.event({ type: "response.output_item.added", outputIndex: this.output.length, item }));
    }
    this.open.text += text;
    events.push(this.event({ type: "response.reasoning_text.delta", itemId: this.open.item.id as string, outputIndex: this.output.length, contentIndex: 0, delta: text }));
    return events;
  }

  private text(text: string): ResponseStreamEvent[] {
    const events: ResponseStreamEvent[] = [];
    if (this.open?.kind !== "message") {
      events.push(...this.close());
      const item: JsonObject = { id: newId("msg"), type: "message", status: "in_progress", role: "assistant", content: [] };
      this.open = { kind: "message", item, text: "", logprobs: [] };
      const index = this.output.length;
      events.push(this.event({ type: "response.output_item.added", outputIndex: index, item }));
      events.push(this.event({ type: "response.content_part.added", itemId: item.id as string, outputIndex: index, contentIndex: 0, part: textPart("", []) }));
    }
    const logprobs = this.pending;
    this.pending = [];
    this.open.text += text;
    this.open.logprobs.push(...logprobs);
    events.push(this.event({ type: "response.output_text.delta", itemId: this.open.item.id as string, outputIndex: this.output.length, contentIndex: 0, delta: text, logprobs }));
    return events;
  }

  private toolCall(index: number, id: string | undefined, name: string | undefined, args: string): ResponseStreamEvent[] {
    // OpenAI's max_tool_calls: calls past the limit are ignored.
    if (this.options.maxToolCalls !== null && index >= this.options.maxToolCalls) return [];
    const events: ResponseStreamEvent[] = [];
    this.pending = [];
    if (this.open?.kind !== "function_call" || this.open.index !== index) {
      events.push(...this.close());
      if (this.seenCalls.has(index)) return events;
      this.seenCalls.add(index);
      const item: JsonObject = { id: newId("fc"), type: "function_call", status: "in_progress", call_id: id ?? newId("call"), name: name ?? "", arguments: "" };
      this.open = { kind: "function_call", item, index, arguments: "" };
      events.push(this.event({ type: "response.output_item.added", outputIndex: this.output.length, item }));
    }
    if (!args) return events;
    this.open.arguments += args;
    events.push(this.event({ type: "response.function_call_arguments.delta", itemId: this.open.item.id as string, outputIndex: this.output.length, delta: args }));
    return events;
  }

  /** Ends the open item: its done events, and it joins the output. */
  private close(): ResponseStreamEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = null;
    const index = this.output.length;
    const itemId = open.item.id as string;
    const status = this.finish === "length" ? "incomplete" : "completed";
    const events: ResponseStreamEvent[] = [];
    let item: JsonObject;
    if (open.kind === "reasoning") {
      item = { ...open.item, content: [{ type: "reasoning_text", text: open.text }], status };
      events.push(this.event({ type: "response.reasoning_text.done", itemId, outputIndex: index, contentIndex: 0, text: open.text }));
    } else if (open.kind === "message") {
      const part = textPart(open.text, this.options.outputLogprobs ? open.logprobs : null);
      item = { ...open.item, content: [part], status };
      events.push(this.event({ type: "response.output_text.done", itemId, outputIndex: index, contentIndex: 0, text: open.text, logprobs: open.logprobs }));
      events.push(this.event({ type: "response.content_part.done", itemId, outputIndex: index, contentIndex: 0, part }));
    } else {
      item = { ...open.item, arguments: open.arguments, status };
      events.push(this.event({ type: "response.function_call_arguments.done", itemId, outputIndex: index, arguments: open.arguments, name: open.item.name as string }));
    }
    this.output.push(item);
    events.push(this.event({ type: "response.output_item.done", outputIndex: index, item }));
    return events;
  }

  private snapshot(status: string): Response {
    const done = status !== "in_progress";
    return {
      ...this.base,
      status,
      output: done ? [...this.output] : [],
      incompleteDetails: status === "incomplete" ? create(IncompleteDetailsSchema, { reason: "max_output_tokens" }) : undefined,
      usage: done ? this.usage : undefined,
      tokenGenerations: done && this.promptIds.length > 0 ? [this.generation()] : [],
    };
  }

  /** ART's exact-token evidence for the whole generation (one per response). */
  private generation(): JsonObject {
    const scored = this.tokenLogprobs.every((v) => v !== null);
    return {
      prompt_token_ids: this.promptIds,
      token_ids: this.tokenIds,
      output_tokens: this.tokenIds.map((id, i): JsonValue => (scored ? { token_id: id, logprob: this.tokenLogprobs[i] ?? null } : { token_id: id })),
      output_indices: this.output.map((_, i) => i),
    };
  }

  private event(fields: EventFields): ResponseStreamEvent {
    return create(ResponseStreamEventSchema, { ...fields, sequenceNumber: this.sequence++ });
  }
}

function textPart(text: string, logprobs: JsonObject[] | null): JsonObject {
  return { type: "output_text", text, annotations: [], ...(logprobs ? { logprobs } : {}) };
}

function logprobJson(entry: TokenLogprobInit): JsonObject {
  return {
    token: entry.token ?? "",
    logprob: entry.logprob ?? 0,
    bytes: [...(entry.bytes ?? [])],
    top_logprobs: (entry.topLogprobs ?? []).map((top) => ({ token: top.token ?? "", logprob: top.logprob ?? 0, bytes: [...(top.bytes ?? [])] })),
  };
}
