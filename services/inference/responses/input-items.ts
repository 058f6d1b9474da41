// Responses input items -> chat messages, as ART reads a captured exchange
// (services/training/trainer/tokenize/exchange-responses.ts): a string is one user message;
// messages keep their role (developer is a system message), function_call items become an
// assistant message's tool calls, function_call_output items tool messages, and reasoning items
// the next assistant message's reasoning. Anything the text-only models cannot read is a 400
// naming where it is.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { validationError, type Violation } from "../../core/errors.js";

const ROLES = new Set(["user", "system", "developer", "assistant"]);
const TEXT_PARTS = new Set(["input_text", "output_text", "text"]);
const UNSUPPORTED_PARTS: Record<string, string> = {
  input_image: "images are not supported: the served models read text only",
  input_file: "files are not supported: the served models read text only",
  input_audio: "audio is not supported: the served models read text only",
};

/** The input as chat messages; throws a 400 listing every item it cannot convert. */
export function inputMessages(input: JsonValue | undefined): JsonObject[] {
  if (input === undefined || input === null) return [];
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) throw validationError([violation(["input"], "Input should be a string or a list of input items", input)]);
  const violations: Violation[] = [];
  const messages: JsonObject[] = [];
  let reasoning = "";
  let toolCalls: JsonObject[] | null = null;
  for (const [i, item] of input.entries()) {
    const at = ["input", i];
    if (!isObject(item)) {
      violations.push(violation(at, "Input items must be objects", item));
      continue;
    }
    const type = item.type ?? "message";
    if (type === "reasoning") {
      toolCalls = null;
      reasoning += reasoningText(item);
      continue;
    }
    if (type === "function_call") {
      const call = functionCall(item, at, violations);
      if (!call) continue;
      if (toolCalls === null) {
        toolCalls = [];
        messages.push({ role: "assistant", content: null, tool_calls: toolCalls, ...(reasoning ? { reasoning_content: reasoning } : {}) });
        reasoning = "";
      }
      toolCalls.push(call);
      continue;
    }
    toolCalls = null;
    let message: JsonObject | null = null;
    if (type === "function_call_output") message = toolOutput(item, at, violations);
    else if (type === "message") message = chatMessage(item, at, violations);
    else violations.push(violation([...at, "type"], `Input items of type ${JSON.stringify(type)} are not supported (message, function_call, function_call_output and reasoning are)`, type));
    if (!message) continue;
    if (reasoning) {
      if (message.role === "assistant") message.reasoning_content = reasoning;
      else messages.push({ role: "assistant", content: "", reasoning_content: reasoning });
      reasoning = "";
    }
    messages.push(message);
  }
  if (reasoning) messages.push({ role: "assistant", content: "", reasoning_content: reasoning });
  if (violations.length > 0) throw validationError(violations);
  return messages;
}

function chatMessage(item: JsonObject, at: (string | number)[], violations: Violation[]): JsonObject | null {
  const role = item.role;
  if (typeof role !== "string" || !ROLES.has(role)) {
    violations.push(violation([...at, "role"], "Input should be 'user', 'system', 'developer' or 'assistant'", role ?? null));
    return null;
  }
  const content = messageText(item.content, [...at, "content"], violations);
  if (content === null) return null;
  return { role: role === "developer" ? "system" : role, content };
}

function messageText(content: JsonValue | undefined, at: (string | number)[], violations: Violation[]): string | null {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) {
    violations.push(violation(at, "Input should be a string or a list of content parts", content ?? null));
    return null;
  }
  let text = "";
  let ok = true;
  for (const [j, part] of content.entries()) {
    const type = isObject(part) ? part.type : undefined;
    const value = isObject(part) ? (type === "refusal" ? part.refusal : part.text) : undefined;
    if (typeof type === "string" && (TEXT_PARTS.has(type) || type === "refusal") && typeof value === "string") {
      text += value;
      continue;
    }
    ok = false;
    const reason = typeof type === "string" ? UNSUPPORTED_PARTS[type] : undefined;
    violations.push(violation([...at, j, "type"], reason ? `Content parts of type "${String(type)}": ${reason}` : "Content parts must be input_text, output_text or refusal with their text", isObject(part) ? (part.type ?? null) : part));
  }
  return ok ? text : null;
}

function functionCall(item: JsonObject, at: (string | number)[], violations: Violation[]): JsonObject | null {
  const { call_id: callId, name, arguments: args } = item;
  if (typeof callId !== "string" || typeof name !== "string" || typeof args !== "string") {
    violations.push(violation(at, "A function_call item needs call_id, name and arguments as strings", item));
    return null;
  }
  return { id: callId, type: "function", function: { name, arguments: args } };
}

function toolOutput(item: JsonObject, at: (string | number)[], violations: Violation[]): JsonObject | null {
  if (typeof item.call_id !== "string") {
    violations.push(violation([...at, "call_id"], "A function_call_output item needs its call_id", item.call_id ?? null));
    return null;
  }
  const output = typeof item.output === "string" ? item.output : messageText(item.output, [...at, "output"], violations);
  return output === null ? null : { role: "tool", tool_call_id: item.call_id, content: output };
}

/** A reasoning item's text: its reasoning_text content, else its summary. */
export function reasoningText(item: JsonObject): string {
  let text = "";
  for (const field of ["content", "summary"] as const) {
    const blocks = item[field];
    if (!Array.isArray(blocks)) continue;
    for (const block of blocks) if (isObject(block) && typeof block.text === "string") text += block.text;
  }
  return text;
}

function violation(loc: (string | number)[], msg: string, input: JsonValue): Violation {
  return { type: "value_error", loc: ["body", ...loc], msg, input };
}

export function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
