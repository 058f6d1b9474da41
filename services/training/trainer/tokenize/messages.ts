// ART JSON shapes of `messages_and_choices` items (spec §1.1, §1.4, compat §3.3): telling a Choice
// from a plain message, ART's `messages()` view of both, and the template-input adjustments shared
// by RL and SFT tokenization (§2.1 steps 3-4, §7.3).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";

/** One sampled token of a Choice's logprobs (`token` may be "token_id:<n>" or the token's text). */
export interface SampledToken {
  token: string;
  /** null when the sampler sent none (or a non-number): the position then has no old logprob. */
  logprob: number | null;
  bytes: number[] | null;
}

/**
 * The inference server's own token ids of a Choice (ART 0.5.23 asks for `return_token_ids` and
 * copies the response's `prompt_token_ids` and the choice's `token_ids` onto the Choice).
 */
export interface ChoiceTokenIds {
  promptIds: number[];
  outputIds: number[];
}

export type ChoiceItem = {
  kind: "choice";
  /** ART's `messages()` form: {role: "assistant", content: string, tool_calls?}. */
  message: JsonObject;
  /** Non-null when the Choice carries sampled tokens (logprobs.content, else .refusal, non-empty). */
  sampled: SampledToken[] | null;
  /** Whether `logprobs` is an object at all (ART 0.5.23 trains such a Choice; null logprobs only with the flag). */
  hasLogprobs: boolean;
  /** Both `prompt_token_ids` and `token_ids`, when the Choice carries them. */
  tokenIds: ChoiceTokenIds | null;
};

export type HistoryItem = { kind: "message"; message: JsonObject } | ChoiceItem;

export function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A list as sent: absent or null is empty, anything else but a list is refused naming `where`. */
export function listOf(value: JsonValue | undefined, where: string): JsonValue[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new TrainingInputError(`${where}: expected a list`);
  return value;
}

/**
 * A Choice is recognised structurally, as ART's own readers do after a JSON round trip: no
 * top-level `role`, and a `message` object (or the Choice-only keys finish_reason / logprobs).
 */
export function isChoice(item: JsonObject): boolean {
  if (typeof item.role === "string") return false;
  return isObject(item.message) || "finish_reason" in item || "logprobs" in item;
}

/** Parses one item; `where` names it in errors. */
export function parseItem(item: JsonValue, where: string): HistoryItem {
  if (!isObject(item)) throw new TrainingInputError(`${where}: expected an object (a message or a Choice)`);
  if (isChoice(item)) {
    const message = isObject(item.message) ? item.message : {};
    return { kind: "choice", message: choiceMessage(message), sampled: sampledTokens(item.logprobs, where), hasLogprobs: isObject(item.logprobs), tokenIds: choiceTokenIds(item, where) };
  }
  if (typeof item.role !== "string") throw new TrainingInputError(`${where}: a message needs a string "role" (a Choice needs "message")`);
  return { kind: "message", message: { ...item, content: item.content ?? "" } };
}

/** `messages()` of a Choice: content or "", tool_calls only when there are any. */
function choiceMessage(message: JsonObject): JsonObject {
  const toolCalls = Array.isArray(message.tool_calls) && message.tool_calls.length > 0 ? message.tool_calls : null;
  const content = typeof message.content === "string" ? message.content : Array.isArray(message.content) ? message.content : "";
  return { role: "assistant", content, ...(toolCalls ? { tool_calls: toolCalls } : {}) };
}

/**
 * logprobs.content, else logprobs.refusal. An object whose lists are both null or empty counts as
 * no logprobs: ART would splice nothing and lose the turn's text from the sequence.
 */
function sampledTokens(logprobs: JsonValue | undefined, where: string): SampledToken[] | null {
  if (!isObject(logprobs)) return null;
  const list = Array.isArray(logprobs.content) && logprobs.content.length > 0 ? logprobs.content : Array.isArray(logprobs.refusal) && logprobs.refusal.length > 0 ? logprobs.refusal : null;
  if (!list) return null;
  return list.map((entry, i) => {
    if (!isObject(entry) || typeof entry.token !== "string") throw new TrainingInputError(`${where}: logprobs entry ${i} needs a string "token"`);
    const logprob = typeof entry.logprob === "number" && Number.isFinite(entry.logprob) ? entry.logprob : null;
    const bytes = Array.isArray(entry.bytes) && entry.bytes.every((b) => typeof b === "number") ? (entry.bytes as number[]) : null;
    return { token: entry.token, logprob, bytes };
  });
}

/** `prompt_token_ids` and `token_ids` of a Choice: both lists of ids, or null when either is absent. */
function choiceTokenIds(item: JsonObject, where: string): ChoiceTokenIds | null {
  if (item.prompt_token_ids === undefined || item.prompt_token_ids === null || item.token_ids === undefined || item.token_ids === null) return null;
  return { promptIds: tokenIdList(item.prompt_token_ids, `${where}.prompt_token_ids`), outputIds: tokenIdList(item.token_ids, `${where}.token_ids`) };
}

/** A list of token ids (non-negative integers). */
export function tokenIdList(value: JsonValue, where: string): number[] {
  if (!Array.isArray(value) || !value.every((v): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0)) {
    throw new TrainingInputError(`${where}: expected a list of token ids`);
  }
  return value;
}

/**
 * Text-only content parts become one string joined by "\n" — what the inference gateway sends the
 * engine (services/inference/chat/messages.ts flattenTextParts), so training renders what sampling saw.
 */
export function flattenTextParts(message: JsonObject): JsonObject {
  const content = message.content;
  if (!Array.isArray(content)) return message;
  const texts = content.map((part) => (isObject(part) && typeof part.text === "string" ? part.text : ""));
  return { ...message, content: texts.join("\n") };
}

/** §2.1 step 4: tool entries without `type` are wrapped as {type: "function", function: entry}. */
export function normalizeTools(tools: JsonValue | undefined, where: string): JsonObject[] | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) throw new TrainingInputError(`${where}: "tools" must be a list`);
  return tools.map((tool, i) => {
    if (!isObject(tool)) throw new TrainingInputError(`${where}: tools[${i}] must be an object`);
    return "type" in tool ? tool : { type: "function", function: tool };
  });
}

/** §2.1 step 3: templates that iterate `tool_call.arguments|items` need the JSON arguments parsed. */
export function templateWantsParsedArguments(template: string): boolean {
  return template.includes("tool_call.arguments|items");
}

export function parseToolArguments(message: JsonObject): JsonObject {
  if (!Array.isArray(message.tool_calls)) return message;
  const toolCalls = message.tool_calls.map((call) => {
    if (!isObject(call) || !isObject(call.function) || typeof call.function.arguments !== "string") return call;
    let parsed: JsonValue;
    try {
      parsed = JSON.parse(call.function.arguments) as JsonValue;
    } catch {
      return call; // left as text: the template shows it as sampled
    }
    return { ...call, function: { ...call.function, arguments: parsed } };
  });
  return { ...message, tool_calls: toolCalls };
}
