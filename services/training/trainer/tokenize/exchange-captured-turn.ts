// One captured exchange (ART 0.5.23 `Trajectory.exchanges`, each `{request, response, start_time,
// end_time}` with the model from `request.model`, else `response.model`) as the trainer reads it:
// the request as chat messages (ART's conversion of each protocol, art/trajectories/_tokenize.py
// `_request_messages` / `_response_message`), and each sampled output as a messages_and_choices
// Choice, with the inference server's own token ids when the response carries them.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import { isObject, type ChoiceItem, type SampledToken } from "./messages.js";

export type ExchangeKind = "chat_completions" | "completions" | "responses" | "messages";

/** The server's own tokens of one generation: the prompt it saw, what it sampled, and their log-probs. */
export interface ExactTokens {
  promptIds: number[];
  outputIds: number[];
  /** One per output token; null where the response had none (or no logprobs at all). */
  logprobs: (number | null)[];
  /** Whether the response carried log-probabilities for this output. */
  hasLogprobs: boolean;
}

/** A legacy completion's prompt and output where the response has no token ids (tokenized later). */
export interface TextGeneration {
  prompt: { ids: number[] } | { text: string; addSpecialTokens: boolean };
  /** The sampled tokens from `logprobs.tokens` when present, else the text. */
  output: { sampled: SampledToken[] } | { text: string };
}

export interface CapturedOutput {
  /** The sampled assistant turn as a Choice (its sampled tokens from the response's logprobs). */
  choice: ChoiceItem;
  exact: ExactTokens | null;
  /** Legacy completions only: what tokenizing needs when `exact` is null. */
  text: TextGeneration | null;
  where: string;
}

export interface CapturedTurn {
  kind: ExchangeKind;
  model: string | null;
  /** Milliseconds (NaN when absent): ART orders exchanges by (start_time, end_time). */
  start: number;
  end: number;
  /** The request as chat messages; null for a legacy completion (a text or token prompt). */
  messages: JsonObject[] | null;
  tools: JsonObject[] | null;
  outputs: CapturedOutput[];
  where: string;
}

export function requestAndResponse(exchange: JsonValue, where: string): { request: JsonObject; response: JsonObject } {
  if (!isObject(exchange) || !isObject(exchange.request) || !isObject(exchange.response)) throw new TrainingInputError(`${where}: needs "request" and "response" objects`);
  return { request: exchange.request, response: exchange.response };
}

/** ART's exchange `model`: the request's, else the response's. */
export function exchangeModel(request: JsonObject, response: JsonObject): string | null {
  return typeof request.model === "string" ? request.model : typeof response.model === "string" ? response.model : null;
}

export function exchangeTimes(exchange: JsonObject): { start: number; end: number } {
  const time = (value: JsonValue | undefined) => (typeof value === "string" ? Date.parse(value) : typeof value === "number" ? value * 1000 : NaN);
  return { start: time(exchange.start_time), end: time(exchange.end_time) };
}

/** A token id given as an integer or as vLLM's "token_id:<n>" string (ART `_token_id`), else null. */
export function tokenIdOf(value: JsonValue | undefined): number | null {
  if (typeof value === "number" && Number.isInteger(value) && value >= 0) return value;
  const match = typeof value === "string" ? /^token_id:(\d+)$/.exec(value) : null;
  return match ? Number(match[1]) : null;
}

/** Optional exact ids (`prompt_token_ids`, `token_ids`): null when absent or empty-and-meant-missing. */
export function optionalIds(value: JsonValue | undefined, where: string, emptyIsMissing = false): number[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw new TrainingInputError(`${where}: expected a list of token ids`);
  const ids = value.map((v) => tokenIdOf(v));
  if (ids.some((id) => id === null)) throw new TrainingInputError(`${where}: contains an invalid token id`);
  return emptyIsMissing && ids.length === 0 ? null : (ids as number[]);
}

/** A log-prob value, or null for anything that is not a finite number. */
export function logprobOf(value: JsonValue | undefined): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** A Choice in ART's messages() form from an assistant message and its sampled tokens. */
export function choiceItem(message: JsonObject, sampled: SampledToken[] | null, tokenIds: ExactTokens | null): ChoiceItem {
  const toolCalls = Array.isArray(message.tool_calls) && message.tool_calls.length > 0 ? message.tool_calls : null;
  const content = typeof message.content === "string" ? message.content : "";
  return {
    kind: "choice",
    message: { role: "assistant", content, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
    sampled: sampled && sampled.length > 0 ? sampled : null,
    hasLogprobs: sampled !== null,
    tokenIds: tokenIds ? { promptIds: tokenIds.promptIds, outputIds: tokenIds.outputIds } : null,
  };
}

/** Sampled tokens from exact ids and their log-probs (the splice path reads "token_id:<n>"). */
export function sampledFromIds(ids: readonly number[], logprobs: readonly (number | null)[]): SampledToken[] {
  return ids.map((id, i) => ({ token: `token_id:${id}`, logprob: logprobs[i] ?? null, bytes: null }));
}
