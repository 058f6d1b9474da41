// One streamed chat completion and what the browser measures of it: the text so far, how it
// ended (finish reason, stopped by the person, failed), usage, time to first token and speed.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ChatCompletionRequestSchema } from "../../../gen/srl/v1/inference_pb.js";
import { inference, readable } from "../api.js";
import type { Sampling } from "./sampling-fields.js";

export type ChatRequest = MessageInitShape<typeof ChatCompletionRequestSchema>;

export interface Prompts {
  system: string;
  user: string;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ReplyState {
  outcome: "streaming" | "finished" | "stopped" | "failed";
  text: string;
  /** Reasoning the server split from the text (models that think first); usually empty. */
  reasoning: string;
  finishReason: string | null;
  /** The counts so far while streaming (continuous usage), the server's final counts once finished. */
  usage: TokenUsage | null;
  error: string | null;
  /** performance.now() times: request sent, first text, latest text. */
  sentAt: number;
  firstTokenAt: number | null;
  lastTokenAt: number | null;
}

export function chatRequest(model: string, prompts: Prompts, sampling: Sampling): ChatRequest {
  const text = (value: string) => ({ kind: { case: "stringValue" as const, value } });
  return {
    model,
    messages: [...(prompts.system.trim() ? [{ role: "system", content: text(prompts.system) }] : []), { role: "user", content: text(prompts.user) }],
    temperature: sampling.temperature,
    topP: sampling.topP,
    maxCompletionTokens: sampling.maxTokens,
    ...(sampling.seed !== undefined ? { seed: sampling.seed } : {}),
    stop: sampling.stop,
    // Usage on every chunk: a stopped reply still knows how many tokens it got.
    streamOptions: { includeUsage: true, continuousUsageStats: true },
  };
}

/** Streams `request`, calling `update` after every chunk; aborting `signal` ends it as "stopped". */
export async function streamReply(request: ChatRequest, signal: AbortSignal, update: (state: ReplyState) => void): Promise<ReplyState> {
  const state: ReplyState = { outcome: "streaming", text: "", reasoning: "", finishReason: null, usage: null, error: null, sentAt: performance.now(), firstTokenAt: null, lastTokenAt: null };
  update(state);
  try {
    for await (const chunk of inference.streamChatCompletion(request, { signal })) {
      const choice = chunk.choices[0];
      const content = choice?.delta?.content ?? "";
      const reasoning = choice?.delta?.reasoning ?? choice?.delta?.reasoningContent ?? "";
      if (content || reasoning) {
        const now = performance.now();
        state.firstTokenAt ??= now;
        state.lastTokenAt = now;
      }
      state.text += content;
      state.reasoning += reasoning;
      if (choice?.finishReason) state.finishReason = choice.finishReason;
      if (chunk.usage) state.usage = { promptTokens: chunk.usage.promptTokens, completionTokens: chunk.usage.completionTokens, totalTokens: chunk.usage.totalTokens };
      update(state);
    }
    state.outcome = "finished";
  } catch (error) {
    if (signal.aborted) state.outcome = "stopped";
    else [state.outcome, state.error] = ["failed", readable(error)];
  }
  update(state);
  return state;
}

/** Below this the browser cannot tell generation speed from how the network grouped the chunks. */
const SHORTEST_MEASURED_MS = 100;

/**
 * Generated tokens per second after the first one (the wait for the first is the prompt's time);
 * null when too few tokens or too short a time to measure.
 */
export function tokensPerSecond(state: ReplyState): number | null {
  const tokens = state.usage?.completionTokens ?? 0;
  if (state.firstTokenAt === null || state.lastTokenAt === null || tokens < 2) return null;
  const ms = state.lastTokenAt - state.firstTokenAt;
  return ms >= SHORTEST_MEASURED_MS ? (tokens - 1) / (ms / 1000) : null;
}
