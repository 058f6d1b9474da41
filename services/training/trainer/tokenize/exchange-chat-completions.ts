// A `/v1/chat/completions` exchange: the request's messages and tools are the context; each
// response choice is a sampled output, its exact tokens from `prompt_token_ids` (choice or
// response) and `token_ids` or the "token_id:<n>" logprob tokens (ART 0.5.23
// `_chat_choice_tokens` / `_chat_choice_output_tokens`).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import { isObject, listOf, normalizeTools, parseItem } from "./messages.js";
import { exchangeModel, exchangeTimes, logprobOf, optionalIds, requestAndResponse, tokenIdOf, type CapturedOutput, type CapturedTurn, type ExactTokens } from "./exchange-captured-turn.js";

export function chatCompletionsTurn(exchange: JsonValue, where: string): CapturedTurn {
  const { request, response } = requestAndResponse(exchange, where);
  const messages = listOf(request.messages, `${where}.request.messages`).map((m, i) => parseItem(m, `${where}.request.messages[${i}]`).message);
  const choices = listOf(response.choices, `${where}.response.choices`);
  if (choices.length === 0) throw new TrainingInputError(`${where}.response.choices: the response contains no choices`);
  const ordered = [...choices].sort((a, b) => indexOf(a) - indexOf(b));
  const outputs = ordered.map((choice, c): CapturedOutput => {
    const at = `${where}.response.choices[${c}]`;
    const item = parseItem(choice, at);
    if (item.kind !== "choice" || !isObject(choice)) throw new TrainingInputError(`${at}: expected a Choice`);
    return { choice: item, exact: exactTokens(choice, response, at), text: null, where: at };
  });
  return { kind: "chat_completions", model: exchangeModel(request, response), ...exchangeTimes(exchange as JsonObject), messages, tools: normalizeTools(request.tools, `${where}.request`), outputs, where };
}

function indexOf(choice: JsonValue): number {
  return isObject(choice) && typeof choice.index === "number" ? choice.index : 0;
}

function exactTokens(choice: JsonObject, response: JsonObject, where: string): ExactTokens | null {
  const promptIds = optionalIds(choice.prompt_token_ids ?? response.prompt_token_ids, `${where}.prompt_token_ids`, true);
  const logprobs = isObject(choice.logprobs) ? choice.logprobs : null;
  const entries = logprobs ? [...listOf(logprobs.content, `${where}.logprobs.content`), ...listOf(logprobs.refusal, `${where}.logprobs.refusal`)] : [];
  let tokenIds = optionalIds(choice.token_ids, `${where}.token_ids`);
  const message = isObject(choice.message) ? choice.message : {};
  // An empty token_ids beside logprobs or output text is "not returned", not "sampled nothing".
  if (tokenIds?.length === 0 && (entries.length > 0 || ["content", "refusal", "reasoning", "reasoning_content", "tool_calls"].some((k) => nonEmpty(message[k])))) tokenIds = null;
  const pairs = entries.map((entry) => (isObject(entry) ? tokenIdOf(entry.token_id ?? entry.token) : null));
  const pairIds = pairs.every((id) => id !== null) ? (pairs as number[]) : [];
  if (tokenIds && pairIds.length > 0 && !sameIds(tokenIds, pairIds)) throw new TrainingInputError(`${where}: token_ids disagree with the choice's logprobs`);
  const outputIds = tokenIds ?? (pairIds.length > 0 ? pairIds : null);
  if (!promptIds || !outputIds) return null;
  if (entries.length > 0 && entries.length !== outputIds.length) throw new TrainingInputError(`${where}: token_ids and logprobs differ in length`);
  return {
    promptIds,
    outputIds,
    logprobs: entries.length > 0 ? entries.map((entry) => (isObject(entry) ? logprobOf(entry.logprob) : null)) : outputIds.map(() => null),
    hasLogprobs: entries.length > 0,
  };
}

function nonEmpty(value: JsonValue | undefined): boolean {
  return Array.isArray(value) ? value.length > 0 : Boolean(value);
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
