// A Responses request -> the chat completion request it is generated as (the chat endpoint's own
// JSON, so its checks, tools, structured outputs and sampling apply unchanged). Fields the chat
// endpoint has no place for are checked here, naming the Responses field.
import { toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { CreateResponseRequest } from "../../../gen/srl/v1/responses_pb.js";
import { validationError, type Violation } from "../../core/errors.js";
import { isObject } from "./input-items.js";

/** The one `include` value served: log-probabilities on output_text parts. */
export const OUTPUT_TEXT_LOGPROBS = "message.output_text.logprobs";

export interface ChatRequestPlan {
  /** The chat completion request's JSON (messages are the caller's to fill in). */
  chat: JsonObject;
  /** Whether output_text parts carry their log-probabilities. */
  outputLogprobs: boolean;
}

/** `sent` is the request as the client sent it (tools, text, reasoning as JSON). */
export function chatRequest(request: CreateResponseRequest, sent: JsonObject, messages: JsonObject[], streaming: boolean): ChatRequestPlan {
  const violations: Violation[] = [];
  if (request.background === true) violations.push(violation(["background"], "Background responses are not served; responses run while the request is open", true));
  if (request.truncation === "auto") violations.push(violation(["truncation"], 'Only "disabled" is served: an input longer than the context is a 400, never cut', "auto"));
  for (const value of request.include) if (value !== OUTPUT_TEXT_LOGPROBS) violations.push(violation(["include"], `Only "${OUTPUT_TEXT_LOGPROBS}" can be included`, value));
  const tools = chatTools(sent.tools, violations);
  const toolChoice = request.toolChoice ? chatToolChoice(toJson(ValueSchema, request.toolChoice), violations) : undefined;
  const responseFormat = chatResponseFormat(sent.text, violations);
  const effort = reasoningEffort(sent.reasoning, violations);
  if (violations.length > 0) throw validationError(violations);
  const outputLogprobs = request.include.includes(OUTPUT_TEXT_LOGPROBS);
  const chat: JsonObject = {
    model: request.model ?? null,
    messages,
    // Every response carries its sampled tokens' ids and log-probabilities (token_generations) so
    // that a captured exchange trains; output_text parts show them only when included.
    logprobs: true,
    top_logprobs: outputLogprobs ? (request.topLogprobs ?? 0) : 0,
    return_token_ids: true,
    stream: streaming,
    stream_options: streaming ? { include_usage: true } : null,
    parallel_tool_calls: request.parallelToolCalls ?? true,
  };
  if (tools.length > 0) chat.tools = tools;
  if (toolChoice !== undefined) chat.tool_choice = toolChoice;
  if (responseFormat) chat.response_format = responseFormat;
  if (effort) chat.reasoning_effort = effort;
  if (request.temperature !== undefined) chat.temperature = request.temperature;
  if (request.topP !== undefined) chat.top_p = request.topP;
  if (request.maxOutputTokens !== undefined) chat.max_completion_tokens = request.maxOutputTokens;
  return { chat, outputLogprobs };
}

/** Function tools ({type, name, description, parameters, strict}) as chat tools; other types are refused by name. */
function chatTools(tools: JsonValue | undefined, violations: Violation[]): JsonObject[] {
  if (!Array.isArray(tools)) return [];
  const out: JsonObject[] = [];
  for (const [i, tool] of tools.entries()) {
    if (!isObject(tool) || tool.type !== "function") {
      const type = isObject(tool) ? (tool.type ?? null) : tool;
      violations.push(violation(["tools", i, "type"], `Tools of type ${JSON.stringify(type)} are not supported: only "function" tools are served`, type));
      continue;
    }
    if (typeof tool.name !== "string" || tool.name === "") {
      violations.push(violation(["tools", i, "name"], "A function tool needs its name", tool.name ?? null));
      continue;
    }
    const fn: JsonObject = { name: tool.name, parameters: tool.parameters ?? { type: "object", properties: {} } };
    if (typeof tool.description === "string") fn.description = tool.description;
    if (typeof tool.strict === "boolean") fn.strict = tool.strict;
    out.push({ type: "function", function: fn });
  }
  return out;
}

function chatToolChoice(choice: JsonValue, violations: Violation[]): JsonValue | undefined {
  if (choice === "none" || choice === "auto" || choice === "required") return choice;
  if (isObject(choice) && choice.type === "function" && typeof choice.name === "string") return { type: "function", function: { name: choice.name } };
  violations.push(violation(["tool_choice"], 'Input should be "none", "auto", "required" or {"type": "function", "name": ...}', choice));
  return undefined;
}

/** `text.format` as the chat endpoint's response_format (the same structured-output engine path). */
function chatResponseFormat(text: JsonValue | undefined, violations: Violation[]): JsonObject | null {
  if (!isObject(text)) return null;
  const verbosity = text.verbosity;
  if (verbosity !== undefined && verbosity !== null && verbosity !== "low" && verbosity !== "medium" && verbosity !== "high") violations.push(violation(["text", "verbosity"], "Input should be 'low', 'medium' or 'high'", verbosity));
  const format = text.format;
  if (format === undefined || format === null) return null;
  if (!isObject(format)) {
    violations.push(violation(["text", "format"], "Input should be an object with a type", format));
    return null;
  }
  if (format.type === "text") return null;
  if (format.type === "json_object") return { type: "json_object" };
  if (format.type === "json_schema") {
    if (typeof format.name !== "string" || !isObject(format.schema)) {
      violations.push(violation(["text", "format"], "A json_schema format needs name and schema", format));
      return null;
    }
    const schema: JsonObject = { name: format.name, schema: format.schema };
    if (typeof format.strict === "boolean") schema.strict = format.strict;
    if (typeof format.description === "string") schema.description = format.description;
    return { type: "json_schema", json_schema: schema };
  }
  violations.push(violation(["text", "format", "type"], "Input should be 'text', 'json_object' or 'json_schema'", format.type ?? null));
  return null;
}

/** `reasoning.effort` reaches the chat template as chat's reasoning_effort does; `summary` is accepted (the reasoning is returned whole). */
function reasoningEffort(reasoning: JsonValue | undefined, violations: Violation[]): string | null {
  if (!isObject(reasoning)) return null;
  const effort = reasoning.effort;
  if (effort === undefined || effort === null) return null;
  if (typeof effort !== "string" || !["low", "medium", "high"].includes(effort)) {
    violations.push(violation(["reasoning", "effort"], "Input should be 'low', 'medium' or 'high' (the chat templates know no other effort)", effort));
    return null;
  }
  return effort;
}

function violation(loc: (string | number)[], msg: string, input: JsonValue): Violation {
  return { type: "value_error", loc: ["body", ...loc], msg, input };
}
