// A legacy `/v1/completions` exchange: a text (or token) prompt and each choice's `text`. No chat
// template is involved, so its messages_and_choices equivalent is the token sequence itself: the
// prompt's ids (`prompt_token_ids`, or the request's token prompt) then the sampled ids
// (`token_ids`, or the "token_id:<n>" entries of `logprobs.tokens`) with `logprobs.token_logprobs`
// (ART 0.5.23 `_completion_evidence`). Without ids the prompt is tokenized as this service's
// completions endpoint does and the output from its logprob tokens, else its text.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import { isObject, listOf, type SampledToken } from "./messages.js";
import { choiceItem, exchangeModel, exchangeTimes, logprobOf, optionalIds, requestAndResponse, tokenIdOf, type CapturedOutput, type CapturedTurn, type ExactTokens, type TextGeneration } from "./exchange-captured-turn.js";

export function completionsTurn(exchange: JsonValue, where: string): CapturedTurn {
  const { request, response } = requestAndResponse(exchange, where);
  if (request.echo === true) throw new TrainingInputError(`${where}.request.echo: completions captured with echo cannot be trained here`);
  const prompt = singlePrompt(request.prompt, `${where}.request.prompt`);
  const choices = listOf(response.choices, `${where}.response.choices`);
  if (choices.length === 0) throw new TrainingInputError(`${where}.response.choices: the response contains no choices`);
  const outputs = choices.map((choice, c): CapturedOutput => {
    const at = `${where}.response.choices[${c}]`;
    if (!isObject(choice)) throw new TrainingInputError(`${at}: expected an object`);
    const text = typeof choice.text === "string" ? choice.text : "";
    const logprobs = isObject(choice.logprobs) ? choice.logprobs : null;
    const tokens = logprobs ? listOf(logprobs.tokens, `${at}.logprobs.tokens`) : [];
    const values = logprobs ? listOf(logprobs.token_logprobs, `${at}.logprobs.token_logprobs`).map(logprobOf) : [];
    const exact = exactTokens(choice, response, prompt, text, tokens, values, at);
    const sampled: SampledToken[] | null = logprobs ? tokens.map((token, i) => ({ token: typeof token === "string" ? token : String(token), logprob: values[i] ?? null, bytes: null })) : null;
    const fallback: TextGeneration = {
      prompt: "ids" in prompt ? prompt : { text: prompt.text, addSpecialTokens: request.add_special_tokens !== false },
      output: sampled && sampled.length > 0 ? { sampled } : { text },
    };
    return { choice: choiceItem({ role: "assistant", content: text }, sampled, exact), exact, text: exact ? null : fallback, where: at };
  });
  return { kind: "completions", model: exchangeModel(request, response), ...exchangeTimes(exchange as JsonObject), messages: null, tools: null, outputs, where };
}

/** One prompt: a string, a list of token ids, or a one-element list of either. */
function singlePrompt(value: JsonValue | undefined, where: string): { text: string } | { ids: number[] } {
  if (typeof value === "string") return { text: value };
  if (Array.isArray(value) && value.length === 1 && (typeof value[0] === "string" || Array.isArray(value[0]))) return singlePrompt(value[0], where);
  if (Array.isArray(value) && value.every((v) => typeof v === "number")) {
    const ids = optionalIds(value, where);
    if (ids) return { ids };
  }
  throw new TrainingInputError(`${where}: one prompt (text or token ids) per captured completion`);
}

function exactTokens(choice: JsonObject, response: JsonObject, prompt: { text: string } | { ids: number[] }, text: string, tokens: JsonValue[], values: (number | null)[], where: string): ExactTokens | null {
  const promptIds = optionalIds(choice.prompt_token_ids ?? response.prompt_token_ids, `${where}.prompt_token_ids`, true) ?? ("ids" in prompt ? prompt.ids : null);
  let tokenIds = optionalIds(choice.token_ids, `${where}.token_ids`);
  if (tokenIds?.length === 0 && (text || tokens.length > 0)) tokenIds = null;
  const pairs = tokens.map((token) => tokenIdOf(token));
  const pairIds = pairs.every((id) => id !== null) ? (pairs as number[]) : [];
  if (tokenIds && pairIds.length > 0 && (tokenIds.length !== pairIds.length || tokenIds.some((id, i) => id !== pairIds[i]))) throw new TrainingInputError(`${where}: token_ids disagree with the completion's logprobs`);
  const outputIds = tokenIds ?? (pairIds.length > 0 ? pairIds : null);
  if (!promptIds || !outputIds) return null;
  if (values.length > 0 && values.length !== outputIds.length) throw new TrainingInputError(`${where}: token ids and logprobs differ in length`);
  return { promptIds, outputIds, logprobs: values.length > 0 ? values : outputIds.map(() => null), hasLogprobs: values.length > 0 };
}
