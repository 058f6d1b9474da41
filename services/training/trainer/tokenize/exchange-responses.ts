// A `/v1/responses` exchange (OpenAI Responses API) as ART 0.5.23 reads it
// (art/trajectories/_tokenize.py `_responses_messages`, `_response_message`, `_responses_tokens`):
// `instructions` is a system message, `input` a user message or a list of items (messages,
// function_call -> an assistant tool call, function_call_output -> a tool message, reasoning ->
// the next assistant message's reasoning), function tools become chat tools. The response's
// output items (message text, reasoning, function calls) make one assistant turn; its sampled
// tokens are the `output_text` parts' logprobs when every output item is a message whose text
// parts all carry them. Exact ids come only from ART's `token_generations` evidence (one
// generation: `prompt_token_ids` plus `token_ids` or `output_tokens`).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import { isObject, listOf, type SampledToken } from "./messages.js";
import { choiceItem, exchangeModel, exchangeTimes, logprobOf, optionalIds, requestAndResponse, tokenIdOf, type CapturedTurn, type ExactTokens } from "./exchange-captured-turn.js";

export function responsesTurn(exchange: JsonValue, where: string): CapturedTurn {
  const { request, response } = requestAndResponse(exchange, where);
  const message = responseMessage(response, `${where}.response`);
  const exact = generationTokens(response, `${where}.response`);
  const sampled = exact ? exact.outputIds.map((id, i): SampledToken => ({ token: `token_id:${id}`, logprob: exact.logprobs[i] ?? null, bytes: null })) : outputTextLogprobs(response, `${where}.response`);
  return {
    kind: "responses",
    model: exchangeModel(request, response),
    ...exchangeTimes(exchange as JsonObject),
    messages: requestMessages(request, `${where}.request`),
    tools: functionTools(request.tools),
    outputs: [{ choice: choiceItem(message, exact && !exact.hasLogprobs ? null : sampled, exact), exact, text: null, where: `${where}.response` }],
    where,
  };
}

function requestMessages(request: JsonObject, where: string): JsonObject[] {
  const messages: JsonObject[] = [];
  const instructions = request.instructions;
  if (instructions !== undefined && instructions !== null && typeof instructions !== "string") throw new TrainingInputError(`${where}.instructions: must be text`);
  if (instructions) messages.push({ role: "system", content: instructions });
  const input = request.input;
  if (typeof input === "string") {
    messages.push({ role: "user", content: input });
    return messages;
  }
  if (input !== undefined && input !== null && !Array.isArray(input)) throw new TrainingInputError(`${where}.input: must be text or a list of input items`);
  let reasoning = "";
  let toolCalls: JsonValue[] | null = null;
  for (const [i, item] of (input ?? []).entries()) {
    const at = `${where}.input[${i}]`;
    if (!isObject(item)) throw new TrainingInputError(`${at}: input items must be JSON objects`);
    const kind = item.type;
    if (kind === "reasoning") {
      toolCalls = null;
      const text = reasoningText(item);
      if (!text) throw new TrainingInputError(`${at}: a reasoning item has no renderable text`);
      reasoning += text;
      continue;
    }
    if (kind === "function_call") {
      if (toolCalls === null) {
        toolCalls = [];
        messages.push({ role: "assistant", content: "", tool_calls: toolCalls, ...(reasoning ? { reasoning } : {}) });
        reasoning = "";
      }
      toolCalls.push(toolCall(item));
      continue;
    }
    toolCalls = null;
    let message: JsonObject;
    if (kind === "function_call_output") message = { role: "tool", tool_call_id: item.call_id ?? null, content: inputText(item.output ?? "", `${at}.output`) };
    else if ((kind === undefined || kind === null || kind === "message") && typeof item.role === "string") message = { role: item.role, content: inputText(item.content, `${at}.content`) };
    else throw new TrainingInputError(`${at}: unsupported Responses input item type ${JSON.stringify(kind ?? null)}`);
    if (reasoning) {
      if (message.role === "assistant") message.reasoning = reasoning;
      else messages.push({ role: "assistant", content: "", reasoning });
      reasoning = "";
    }
    messages.push(message);
  }
  if (reasoning) messages.push({ role: "assistant", content: "", reasoning });
  return messages;
}

/** The output items as one assistant message (ART `_response_message`). */
function responseMessage(response: JsonObject, where: string): JsonObject {
  let content = "";
  let reasoning = "";
  const toolCalls: JsonValue[] = [];
  for (const [i, item] of listOf(response.output, `${where}.output`).entries()) {
    const at = `${where}.output[${i}]`;
    if (!isObject(item)) throw new TrainingInputError(`${at}: output items must be JSON objects`);
    if (item.type === "message") content += outputText(item.content, `${at}.content`);
    else if (item.type === "reasoning") {
      const text = reasoningText(item);
      if (!text) throw new TrainingInputError(`${at}: a reasoning item has no renderable text`);
      reasoning += text;
    } else if (item.type === "function_call") toolCalls.push(toolCall(item));
    else throw new TrainingInputError(`${at}: unsupported Responses output item type ${JSON.stringify(item.type ?? null)}`);
  }
  return { role: "assistant", content, ...(reasoning ? { reasoning } : {}), ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
}

/** The output_text logprobs, or null unless every output is a message whose text parts all have them. */
function outputTextLogprobs(response: JsonObject, where: string): SampledToken[] | null {
  const sampled: SampledToken[] = [];
  let seen = false;
  for (const item of listOf(response.output, `${where}.output`)) {
    if (!isObject(item) || item.type !== "message") return null;
    for (const part of listOf(item.content, `${where}.output.content`)) {
      if (!isObject(part)) return null;
      const text = part.text ?? part.refusal;
      if (typeof text !== "string" || !text) continue;
      seen = true;
      const entries = Array.isArray(part.logprobs) ? part.logprobs : [];
      if (entries.length === 0) return null;
      for (const entry of entries) {
        if (!isObject(entry) || typeof entry.token !== "string") return null;
        const bytes = Array.isArray(entry.bytes) && entry.bytes.every((b) => typeof b === "number") ? (entry.bytes as number[]) : null;
        sampled.push({ token: entry.token, logprob: logprobOf(entry.logprob), bytes });
      }
    }
  }
  return seen ? sampled : null;
}

/** ART's `token_generations` evidence: exactly one generation with the prompt's and the output's ids. */
function generationTokens(response: JsonObject, where: string): ExactTokens | null {
  const generations = response.token_generations;
  if (generations === undefined || generations === null) return null;
  if (!Array.isArray(generations) || generations.length !== 1 || !isObject(generations[0])) throw new TrainingInputError(`${where}.token_generations: only one generation per captured response can be trained here`);
  const generation = generations[0];
  const promptIds = optionalIds(generation.prompt_token_ids, `${where}.token_generations[0].prompt_token_ids`, true);
  if (!promptIds) throw new TrainingInputError(`${where}.token_generations[0].prompt_token_ids: must hold the whole generation prompt`);
  const pairs = listOf(generation.output_tokens, `${where}.token_generations[0].output_tokens`);
  const pairIds = pairs.map((pair) => (isObject(pair) ? tokenIdOf(pair.token_id ?? pair.token) : null));
  if (pairIds.some((id) => id === null)) throw new TrainingInputError(`${where}.token_generations[0].output_tokens: every token needs an exact id`);
  const outputIds = optionalIds(generation.token_ids, `${where}.token_generations[0].token_ids`) ?? (pairIds as number[]);
  const logprobs = pairs.length === outputIds.length ? pairs.map((pair) => (isObject(pair) ? logprobOf(pair.logprob) : null)) : outputIds.map(() => null);
  return { promptIds, outputIds, logprobs, hasLogprobs: logprobs.some((v) => v !== null) };
}

function toolCall(item: JsonObject): JsonObject {
  return { id: item.call_id ?? null, type: "function", function: { name: item.name ?? null, arguments: typeof item.arguments === "string" ? item.arguments : "{}" } };
}

/** Responses function tools ({type, name, description, parameters}) as chat tools (ART `_openai_tools`). */
export function functionTools(tools: JsonValue | undefined): JsonObject[] | null {
  if (!Array.isArray(tools)) return null;
  return tools.filter(isObject).map((tool) => {
    if ((tool.type ?? "function") !== "function") return tool;
    const fn: JsonObject = {};
    for (const [key, value] of [["name", tool.name], ["description", tool.description], ["parameters", tool.parameters ?? {}]] as const) if (value !== undefined && value !== null) fn[key] = value;
    return { type: "function", function: fn };
  });
}

function inputText(content: JsonValue | undefined, where: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw new TrainingInputError(`${where}: must contain text`);
  return content
    .map((block) => {
      if (!isObject(block) || !["input_text", "output_text", "refusal", "text"].includes(String(block.type))) throw new TrainingInputError(`${where}: unsupported Responses content block ${JSON.stringify(isObject(block) ? (block.type ?? null) : block)}`);
      const value = block.type === "refusal" ? block.refusal : block.text;
      if (typeof value !== "string") throw new TrainingInputError(`${where}: content blocks must contain text`);
      return value;
    })
    .join("");
}

function outputText(content: JsonValue | undefined, where: string): string {
  if (!Array.isArray(content)) throw new TrainingInputError(`${where}: message output content must be a list`);
  return content
    .map((block) => {
      if (!isObject(block) || (block.type !== "output_text" && block.type !== "refusal")) throw new TrainingInputError(`${where}: unsupported Responses output content ${JSON.stringify(isObject(block) ? (block.type ?? null) : block)}`);
      const value = block.type === "refusal" ? block.refusal : block.text;
      if (typeof value !== "string") throw new TrainingInputError(`${where}: ${String(block.type)} content must be text`);
      return value;
    })
    .join("");
}

function reasoningText(item: JsonObject): string {
  let text = "";
  for (const field of ["content", "summary"] as const) {
    const blocks = item[field];
    if (!Array.isArray(blocks)) continue;
    for (const block of blocks) if (isObject(block) && typeof block.text === "string") text += block.text;
  }
  return text;
}
