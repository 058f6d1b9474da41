// Engine events -> OpenAI/vLLM response objects: the whole ChatCompletion for unary calls, and the
// chunks of a stream. Streams follow what clients rebuilding a completion rely on: the first chunk
// holds every choice (role delta), every chunk lists the choices in the same positional order,
// finish_reason arrives on each choice's last chunk, usage in a final chunk without choices.
import { randomUUID } from "node:crypto";
import { fromJson, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ListValueSchema } from "@bufbuild/protobuf/wkt";
import type { ChatCompletionChunkChoiceSchema, ChatCompletionChunkSchema, ChatCompletionSchema, ChoiceLogprobsSchema } from "../../../gen/srl/v1/inference_pb.js";
import type { EngineToGateway, TokenLogprobOut } from "../engine/protocol.js";
import { stopReasonValue, usageMessage } from "../generation/response-fields.js";
import { joinToolCalls, ReplyPipeline, type ReplyParts } from "./reply-pipeline.js";
import type { ToolMode } from "./tool-choice.js";

type Event = Exclude<EngineToGateway, { type: "ready" } | { type: "failed" }>;

export interface ChatResponseOptions {
  id: string | undefined;
  model: string;
  /** Which weights answer (generation/response-fields.ts). */
  systemFingerprint: string;
  n: number;
  logprobs: boolean;
  returnTokenIds: boolean;
  /** Reasoning (<think>...</think>) goes to `reasoning` when true, and is dropped otherwise. */
  includeReasoning: boolean;
  /** How tool calls are read from the text (tool_choice). */
  toolMode: ToolMode;
  includeUsage: boolean;
  continuousUsage: boolean;
}

export function chatCompletionId(requestId: string | undefined): string {
  return requestId ?? `chatcmpl-${randomUUID().replace(/-/g, "")}`;
}

/** Collects a whole generation into one ChatCompletion. */
export async function buildChatCompletion(events: AsyncIterable<Event>, options: ChatResponseOptions): Promise<MessageInitShape<typeof ChatCompletionSchema>> {
  const choices = Array.from({ length: options.n }, () => ({ text: "", tokenIds: [] as number[], logprobs: [] as TokenLogprobOut[], finish: "stop", stop: null as number | string | null }));
  let promptTokenIds: number[] = [];
  let promptLogprobs: JsonValue[] | null = null;
  let echo = "";
  let usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  for await (const event of events) {
    if (event.type === "started") {
      promptTokenIds = event.promptTokenIds;
      promptLogprobs = event.promptLogprobs as JsonValue[] | null;
      echo = event.echoText ?? "";
    } else if (event.type === "delta") {
      const choice = choices[event.choice];
      if (!choice) continue;
      choice.text += event.text;
      choice.tokenIds.push(...event.tokenIds);
      choice.logprobs.push(...event.logprobs);
    } else if (event.type === "finished") {
      const choice = choices[event.choice];
      if (choice) [choice.finish, choice.stop] = [event.finishReason, event.stopReason];
    } else if (event.type === "done") usage = event.usage;
  }
  return {
    id: chatCompletionId(options.id),
    object: "chat.completion",
    created: BigInt(Math.floor(Date.now() / 1000)),
    model: options.model,
    systemFingerprint: options.systemFingerprint,
    choices: choices.map((choice, index) => {
      const reply = wholeReply(echo + choice.text, options);
      const calls = joinToolCalls(reply.calls);
      return {
        index,
        message: {
          role: "assistant",
          content: reply.content,
          ...(reply.reasoning && options.includeReasoning ? { reasoning: reply.reasoning } : {}),
          toolCalls: calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })),
          annotations: [],
        },
        logprobs: options.logprobs ? logprobsMessage(choice.logprobs) : undefined,
        finishReason: finishReason(options.toolMode, calls.length, choice.finish),
        stopReason: stopReasonValue(choice.stop),
        tokenIds: options.returnTokenIds ? choice.tokenIds : [],
      };
    }),
    usage: usageMessage(usage),
    promptTokenIds: options.returnTokenIds ? promptTokenIds : [],
    promptLogprobs: promptLogprobs ? fromJson(ListValueSchema, promptLogprobs) : undefined,
  };
}

/** Turns engine events into stream chunks. */
export async function* streamChatChunks(events: AsyncIterable<Event>, options: ChatResponseOptions): AsyncGenerator<MessageInitShape<typeof ChatCompletionChunkSchema>> {
  const id = chatCompletionId(options.id);
  const created = BigInt(Math.floor(Date.now() / 1000));
  const completion = Array.from({ length: options.n }, () => 0);
  const pipelines = Array.from({ length: options.n }, () => new ReplyPipeline(options.toolMode));
  const callCounts = Array.from({ length: options.n }, () => 0);
  // A choice's text as a delta (content, reasoning) plus tool-call deltas: a call's id, type and
  // name with its first piece of arguments, then the rest of its arguments.
  const replyDelta = (choice: number, parts: ReplyParts) => {
    const toolCalls = parts.calls.map((call) => {
      callCounts[choice] = Math.max(callCounts[choice] ?? 0, call.index + 1);
      const start = call.id !== undefined ? { id: call.id, type: "function" } : {};
      return { index: call.index, ...start, function: { ...(call.name !== undefined ? { name: call.name } : {}), arguments: call.arguments } };
    });
    return { content: parts.content, ...(parts.reasoning && options.includeReasoning ? { reasoning: parts.reasoning } : {}), toolCalls };
  };
  const textDelta = (choice: number, text: string) => replyDelta(choice, pipelines[choice]?.push(text) ?? { reasoning: "", content: text, calls: [] });
  let promptTokens = 0;
  const chunk = (choices: MessageInitShape<typeof ChatCompletionChunkChoiceSchema>[], extra: { promptTokenIds?: number[]; usage?: ReturnType<typeof usageMessage> } = {}): MessageInitShape<typeof ChatCompletionChunkSchema> => ({
    id,
    object: "chat.completion.chunk",
    created,
    model: options.model,
    systemFingerprint: options.systemFingerprint,
    choices,
    promptTokenIds: [],
    ...(options.continuousUsage ? { usage: usageMessage({ promptTokens, completionTokens: sum(completion), cachedTokens: 0 }) } : {}),
    ...extra,
  });
  // Every chunk lists all choices in index order; those without news carry an empty delta.
  const allChoices = (update?: { index: number; choice: Partial<MessageInitShape<typeof ChatCompletionChunkChoiceSchema>> }) =>
    Array.from({ length: options.n }, (_, index) => ({
      index,
      delta: { toolCalls: [] },
      tokenIds: [],
      ...(update?.index === index ? update.choice : {}),
    })) as MessageInitShape<typeof ChatCompletionChunkChoiceSchema>[];
  for await (const event of events) {
    if (event.type === "started") {
      promptTokens = event.promptTokenIds.length;
      const echo = event.echoText ?? "";
      yield chunk(
        Array.from({ length: options.n }, (_, index) => ({ index, delta: { role: "assistant", ...textDelta(index, echo) }, tokenIds: [] })) as MessageInitShape<typeof ChatCompletionChunkChoiceSchema>[],
        options.returnTokenIds ? { promptTokenIds: event.promptTokenIds } : {},
      );
    } else if (event.type === "delta") {
      completion[event.choice] = (completion[event.choice] ?? 0) + event.tokenIds.length;
      yield chunk(
        allChoices({
          index: event.choice,
          choice: {
            delta: textDelta(event.choice, event.text),
            logprobs: options.logprobs ? logprobsMessage(event.logprobs) : undefined,
            tokenIds: options.returnTokenIds ? event.tokenIds : [],
          },
        }),
      );
    } else if (event.type === "finished") {
      const delta = replyDelta(event.choice, pipelines[event.choice]?.flush() ?? { reasoning: "", content: "", calls: [] });
      const reason = finishReason(options.toolMode, callCounts[event.choice] ?? 0, event.finishReason);
      yield chunk(allChoices({ index: event.choice, choice: { delta, finishReason: reason, stopReason: stopReasonValue(event.stopReason) } }));
    } else if (event.type === "done" && options.includeUsage) {
      yield chunk([], { usage: usageMessage(event.usage) });
    }
  }
}

/**
 * "tool_calls" when calls ended the turn (vLLM and OpenAI): with tool_choice "auto" or "required".
 * A call forced by naming the function ends with "stop", as OpenAI answers it.
 */
function finishReason(mode: ToolMode, calls: number, reason: string): string {
  return calls > 0 && reason === "stop" && (mode.kind === "auto" || mode.kind === "required") ? "tool_calls" : reason;
}

function wholeReply(text: string, options: ChatResponseOptions): ReplyParts {
  const pipeline = new ReplyPipeline(options.toolMode);
  const head = pipeline.push(text);
  const tail = pipeline.flush();
  return { reasoning: head.reasoning + tail.reasoning, content: head.content + tail.content, calls: [...head.calls, ...tail.calls] };
}

function logprobsMessage(items: TokenLogprobOut[]): MessageInitShape<typeof ChoiceLogprobsSchema> {
  return {
    content: items.map((item) => ({
      token: item.token,
      logprob: item.logprob,
      bytes: item.bytes,
      topLogprobs: item.top_logprobs.map((top) => ({ token: top.token, logprob: top.logprob, bytes: top.bytes })),
    })),
    refusal: [],
  };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
