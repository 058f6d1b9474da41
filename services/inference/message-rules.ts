// The shape rules of chat messages that the proto cannot state (`content` is a free JSON value
// there): content is a string, a list of known content parts, or null where the role allows it,
// and the role is one of OpenAI's. A violation is a 400 naming the field, like any other
// validation error, whichever protocol the request came by.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { expectedLiterals, validationError, type Violation } from "../core/errors.js";

type Loc = Violation["loc"];

export const KNOWN_ROLES = ["system", "developer", "user", "assistant", "tool", "function"] as const;

/** Roles whose `content` may be null or absent (an assistant turn that only calls tools; a legacy function result). */
const NULLABLE_CONTENT = new Set(["assistant", "function"]);

/** Content part types of OpenAI's and vLLM's message params; the non-text ones are refused later as unsupported here. */
export const KNOWN_PART_TYPES = ["text", "refusal", "image_url", "image_embeds", "input_audio", "audio_url", "video_url", "file"] as const;

/** Which string field holds a text-like part's text. */
const TEXT_FIELD: Record<string, string> = { text: "text", refusal: "refusal" };

/** Throws a validation error listing every message that breaks the rules. */
export function checkMessages(messages: JsonValue | undefined, at: Loc = ["body", "messages"]): void {
  if (!Array.isArray(messages)) return;
  const violations: Violation[] = [];
  messages.forEach((message, index) => {
    if (typeof message === "object" && message !== null && !Array.isArray(message)) checkMessage(message, [...at, index], violations);
  });
  if (violations.length > 0) throw validationError(violations);
}

function checkMessage(message: JsonObject, loc: Loc, violations: Violation[]): void {
  const role = message.role;
  if (typeof role === "string" && !(KNOWN_ROLES as readonly string[]).includes(role)) {
    const expected = expectedLiterals(KNOWN_ROLES);
    violations.push({ type: "literal_error", loc: [...loc, "role"], msg: `Input should be ${expected}`, input: role, ctx: { expected } });
    return;
  }
  const content = message.content;
  const contentLoc = [...loc, "content"];
  if (content === undefined || content === null) {
    if (typeof role === "string" && !NULLABLE_CONTENT.has(role)) {
      violations.push(content === undefined ? { type: "missing", loc: contentLoc, msg: "Field required", input: message } : { type: "string_type", loc: contentLoc, msg: `Input should be a valid string or a list of content parts (content may be null only in assistant and function messages)`, input: null });
    }
    return;
  }
  if (typeof content === "string") return;
  if (!Array.isArray(content)) {
    violations.push({ type: "string_type", loc: contentLoc, msg: "Input should be a valid string or a list of content parts", input: content });
    return;
  }
  content.forEach((part, index) => checkPart(part, [...contentLoc, index], violations));
}

function checkPart(part: JsonValue, loc: Loc, violations: Violation[]): void {
  if (typeof part !== "object" || part === null || Array.isArray(part)) {
    violations.push({ type: "model_type", loc, msg: 'Input should be a content part object such as {"type": "text", "text": "..."}', input: part });
    return;
  }
  const type = part.type;
  if (typeof type !== "string") {
    violations.push({ type: "union_tag_not_found", loc, msg: "Unable to extract tag using discriminator 'type'", input: part });
    return;
  }
  if (!(KNOWN_PART_TYPES as readonly string[]).includes(type)) {
    const expected = KNOWN_PART_TYPES.map((t) => `'${t}'`).join(", ");
    violations.push({ type: "union_tag_invalid", loc, msg: `Input tag '${type}' found using 'type' does not match any of the expected tags: ${expected}`, input: part, ctx: { discriminator: "'type'", tag: type, expected_tags: expected } });
    return;
  }
  const field = TEXT_FIELD[type];
  if (field && typeof part[field] !== "string") {
    violations.push(part[field] === undefined ? { type: "missing", loc: [...loc, field], msg: "Field required", input: part } : { type: "string_type", loc: [...loc, field], msg: "Input should be a valid string", input: part[field] ?? null });
  }
}

/** A message's text parts as one string (joined by newlines, as vLLM does), which every template understands. */
export function flattenTextParts(message: JsonObject): JsonObject {
  const content = message.content;
  if (!Array.isArray(content)) return message;
  const texts = content.map((part) => {
    if (typeof part !== "object" || part === null || Array.isArray(part)) return "";
    const field = typeof part.type === "string" ? TEXT_FIELD[part.type] : undefined;
    const text = field ? part[field] : undefined;
    return typeof text === "string" ? text : "";
  });
  return { ...message, content: texts.join("\n") };
}

/** The text of the final message (continue_final_message: what the output continues). */
export function continuedText(messages: JsonValue | undefined): string {
  const last = Array.isArray(messages) ? messages[messages.length - 1] : undefined;
  if (typeof last !== "object" || last === null || Array.isArray(last)) return "";
  const content = flattenTextParts(last).content;
  return typeof content === "string" ? content : "";
}
