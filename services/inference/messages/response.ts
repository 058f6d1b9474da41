// A chat completion -> Anthropic's message object: content blocks (thinking, text, tool_use with
// its input parsed), Anthropic's stop reasons and usage, and the vLLM-style token extensions ART
// trains on when they were asked for.
import { randomBytes } from "node:crypto";
import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import type { ChatCompletion } from "../../../gen/srl/v1/inference_pb.js";
import type { AnthropicMessageSchema, MessageUsageSchema } from "../../../gen/srl/v1/messages_pb.js";

/** What the client asked to get back beyond Anthropic's fields. */
export interface MessageExtras {
  model: string;
  stopSequences: readonly string[];
  returnTokenIds: boolean;
  logprobs: boolean;
}

export function messageId(): string {
  return `msg_${randomBytes(12).toString("hex")}`;
}

/** Anthropic's stop_reason (and stop_sequence) for a chat finish. */
export function stopReason(finish: string, stop: JsonValue | undefined, calls: number, stopSequences: readonly string[]): { stopReason: string; stopSequence?: string } {
  if (finish === "length") return { stopReason: "max_tokens" };
  if (calls > 0) return { stopReason: "tool_use" };
  if (typeof stop === "string" && stopSequences.includes(stop)) return { stopReason: "stop_sequence", stopSequence: stop };
  return { stopReason: "end_turn" };
}

/** Anthropic's usage: `input_tokens` excludes what the prefix cache read, which is counted apart. */
export function messageUsage(promptTokens: number, completionTokens: number, cachedTokens: number): MessageInitShape<typeof MessageUsageSchema> {
  return { inputTokens: promptTokens - cachedTokens, outputTokens: completionTokens, cacheCreationInputTokens: 0, cacheReadInputTokens: cachedTokens, serviceTier: "standard" };
}

/** A tool call's arguments as the tool_use block's `input` (an object; unparsable text is kept under `_raw`). */
export function toolInput(args: string): JsonObject {
  try {
    const parsed: unknown = JSON.parse(args === "" ? "{}" : args);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as JsonObject) : { _raw: args };
  } catch {
    return { _raw: args };
  }
}

export function anthropicMessage(completion: ChatCompletion, extras: MessageExtras): MessageInitShape<typeof AnthropicMessageSchema> {
  const choice = completion.choices[0];
  const message = choice?.message;
  const content: JsonObject[] = [];
  if (message?.reasoning) content.push({ type: "thinking", thinking: message.reasoning, signature: "" });
  if (message?.content) content.push({ type: "text", text: message.content });
  for (const call of message?.toolCalls ?? []) content.push({ type: "tool_use", id: call.id, name: call.function?.name ?? "", input: toolInput(call.function?.arguments ?? "") });
  const stopValue = choice?.stopReason?.kind.case === "stringValue" ? choice.stopReason.kind.value : undefined;
  const reason = stopReason(choice?.finishReason ?? "stop", stopValue, message?.toolCalls.length ?? 0, extras.stopSequences);
  const usage = completion.usage;
  const tokens = extras.returnTokenIds || extras.logprobs;
  return {
    id: messageId(),
    type: "message",
    role: "assistant",
    content,
    model: extras.model,
    stopReason: reason.stopReason,
    stopSequence: reason.stopSequence,
    usage: messageUsage(usage?.promptTokens ?? 0, usage?.completionTokens ?? 0, usage?.promptTokensDetails?.cachedTokens ?? 0),
    promptTokenIds: tokens ? completion.promptTokenIds : [],
    tokenIds: tokens ? (choice?.tokenIds ?? []) : [],
    logprobs: extras.logprobs ? (choice?.logprobs?.content ?? []).map((item) => item.logprob) : [],
  };
}
