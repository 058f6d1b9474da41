// The checks of a chat completion request that the proto cannot state, each field in one place.
// Before the model is resolved: `model` is named, and every message has OpenAI's shape (`content`
// is a free JSON value in the proto): content is a string, a list of known content parts, or null
// where the role allows it, and the role is one of OpenAI's. Once tools and structured outputs are
// read: the options this engine cannot honour. A violation is a 400 naming the field, like any
// other validation error, whichever protocol the request came by.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { ChatCompletionRequest } from "../../../gen/srl/v1/inference_pb.js";
import { badRequest, expectedLiterals, validationError, type Violation } from "../../core/errors.js";
import { chatPromptBytes, checkPromptBytes, type RequestLimits } from "../generation/request-bounds.js";
import { TEXT_FIELD } from "./messages.js";

type Loc = Violation["loc"];

export const KNOWN_ROLES = ["system", "developer", "user", "assistant", "tool", "function"] as const;

/** Roles whose `content` may be null or absent (an assistant turn that only calls tools; a legacy function result). */
const NULLABLE_CONTENT = new Set(["assistant", "function"]);

/** Content part types of OpenAI's and vLLM's message params; the non-text ones are refused later as unsupported here (checkGenerationOptions). */
export const KNOWN_PART_TYPES = ["text", "refusal", "image_url", "image_embeds", "input_audio", "audio_url", "video_url", "file"] as const;

export function requireModel(request: Pick<ChatCompletionRequest, "model">): string {
  if (!request.model) throw badRequest("model is required");
  return request.model;
}

/** The text the template renders (messages, tools, documents) within MAX_PROMPT_BYTES, before anything is built. */
export function checkPromptSize(sent: JsonObject, limits: RequestLimits): void {
  checkPromptBytes(chatPromptBytes(sent, limits.maxPromptBytes), "messages", limits);
}

/** The messages' shapes: throws a validation error listing every message that breaks the rules. */
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

/**
 * The options this engine cannot honour, once tool_choice and structured outputs are read: a 400
 * naming the field. `sent` is the request as sent, its messages already shape-checked.
 */
export function checkGenerationOptions(request: ChatCompletionRequest, sent: JsonObject, grammars: { forcedToolCall: boolean; structuredOutput: boolean }): void {
  if (grammars.forcedToolCall && grammars.structuredOutput) throw badRequest(`tool_choice: a forced tool call cannot be combined with structured outputs (response_format / structured_outputs)`);
  if (request.mmProcessorKwargs && Object.keys(request.mmProcessorKwargs).length > 0) throw badRequest("mm_processor_kwargs: the served models take text only");
  if (request.engineXargs && Object.keys(request.engineXargs).length > 0) throw badRequest("engine_xargs: this engine has no custom extensions");
  const other = request.modalities.filter((m) => m !== "text");
  if (other.length > 0) throw badRequest(`modalities: only "text" output is served, not ${other.map((m) => JSON.stringify(m)).join(", ")}`);
  for (const type of partTypes(sent.messages)) {
    if (type !== "text" && type !== "refusal") throw badRequest(`messages: content parts of type "${type}" are not supported (text only)`);
  }
  if ((request.continueFinalMessage ?? false) && (request.addGenerationPrompt ?? true)) {
    throw badRequest("continue_final_message and add_generation_prompt cannot both be true; set add_generation_prompt: false to continue the final message");
  }
  if (request.messages.length === 0) throw badRequest("messages must not be empty");
  if ((request.topLogprobs ?? 0) > 0 && !request.logprobs) throw badRequest("top_logprobs needs logprobs: true");
}

/** The type of every content part, in order (checkMessages has made each part an object with a string type). */
function partTypes(messages: JsonValue | undefined): string[] {
  if (!Array.isArray(messages)) return [];
  return messages.flatMap((message) => {
    const content = typeof message === "object" && message !== null && !Array.isArray(message) ? message.content : undefined;
    return Array.isArray(content) ? content.map((part) => String((part as JsonObject).type)) : [];
  });
}
