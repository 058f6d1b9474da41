// Chat completion chunks -> Anthropic's stream events: message_start (with a ping after it), then
// per content block content_block_start, its deltas (thinking_delta, text_delta, input_json_delta)
// and content_block_stop, a new block whenever the kind of output changes, then message_delta
// (stop_reason, usage) and message_stop.
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { ChatCompletionChunk } from "../../../gen/srl/v1/inference_pb.js";
import type { MessageStreamEventSchema } from "../../../gen/srl/v1/messages_pb.js";
import { messageId, messageUsage, stopReason, type MessageExtras } from "./response.js";

type StreamEvent = MessageInitShape<typeof MessageStreamEventSchema>;

export async function* anthropicEvents(chunks: AsyncIterable<ChatCompletionChunk>, extras: MessageExtras): AsyncGenerator<StreamEvent> {
  const id = messageId();
  const tokens = extras.returnTokenIds || extras.logprobs;
  // The block being written (a holder: the generators below change it).
  const current: { open: { kind: "thinking" | "text" | "tool_use"; callIndex: number } | null } = { open: null };
  let index = -1;
  let calls = 0;
  let finish = "stop";
  let stop: string | undefined;
  let usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  const tokenIds: number[] = [];
  const logprobs: number[] = [];
  let started = false;

  function* close(): Generator<StreamEvent> {
    if (current.open) yield { type: "content_block_stop", index };
    current.open = null;
  }
  function* block(kind: "thinking" | "text" | "tool_use", start: JsonObject, callIndex = -1): Generator<StreamEvent> {
    if (current.open?.kind === kind && current.open.callIndex === callIndex) return;
    yield* close();
    index += 1;
    current.open = { kind, callIndex };
    yield { type: "content_block_start", index, contentBlock: start };
  }

  for await (const chunk of chunks) {
    if (!started) {
      started = true;
      const promptTokens = chunk.promptTokenIds.length;
      yield {
        type: "message_start",
        message: { id, type: "message", role: "assistant", content: [], model: extras.model, usage: messageUsage(promptTokens, 0, 0), promptTokenIds: tokens ? chunk.promptTokenIds : [] },
      };
      yield { type: "ping" };
    }
    if (chunk.usage && chunk.choices.length === 0) {
      usage = { promptTokens: chunk.usage.promptTokens, completionTokens: chunk.usage.completionTokens, cachedTokens: chunk.usage.promptTokensDetails?.cachedTokens ?? 0 };
    }
    const choice = chunk.choices[0];
    if (!choice) continue;
    tokenIds.push(...choice.tokenIds);
    logprobs.push(...(choice.logprobs?.content ?? []).map((item) => item.logprob));
    const delta = choice.delta;
    if (delta?.reasoning) {
      yield* block("thinking", { type: "thinking", thinking: "", signature: "" });
      yield { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: delta.reasoning } };
    }
    if (delta?.content) {
      yield* block("text", { type: "text", text: "" });
      yield { type: "content_block_delta", index, delta: { type: "text_delta", text: delta.content } };
    }
    for (const call of delta?.toolCalls ?? []) {
      if (call.id !== undefined) {
        calls += 1;
        yield* block("tool_use", { type: "tool_use", id: call.id, name: call.function?.name ?? "", input: {} }, call.index);
      }
      const args = call.function?.arguments ?? "";
      if (args !== "" && current.open?.kind === "tool_use") yield { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: args } };
    }
    if (choice.finishReason) {
      finish = choice.finishReason;
      stop = choice.stopReason?.kind.case === "stringValue" ? choice.stopReason.kind.value : undefined;
    }
  }
  yield* close();
  const reason = stopReason(finish, stop, calls, extras.stopSequences);
  yield {
    type: "message_delta",
    delta: { stop_reason: reason.stopReason, stop_sequence: reason.stopSequence ?? null },
    usage: messageUsage(usage.promptTokens, usage.completionTokens, usage.cachedTokens),
    tokenIds: tokens ? tokenIds : [],
    logprobs: extras.logprobs ? logprobs : [],
  };
  yield { type: "message_stop" };
}
