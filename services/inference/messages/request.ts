// An Anthropic Messages request -> the chat completion request it means (OpenAI's JSON shape, as
// chat's checks and plan read it): `system` becomes a system message, content blocks become text,
// assistant tool calls, tool messages and reasoning; tools with `input_schema` become functions;
// tool_choice, stop_sequences, thinking and output_config map onto their chat equivalents. What
// chat cannot do here (images, documents, server tools) is a 400 naming it.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { CreateMessageRequest } from "../../../gen/srl/v1/messages_pb.js";
import { badRequest } from "../../core/errors.js";

/** Block types that carry media or server-side results: the served models read text only. */
const UNSUPPORTED_BLOCKS: Record<string, string> = {
  image: "images are not supported (the served models take text only)",
  document: "documents are not supported (the served models take text only); send the text as a text block",
  search_result: "search_result blocks are not supported; send the text as a text block",
  redacted_thinking: "redacted_thinking blocks are not supported (this service never produces them)",
  container_upload: "container uploads are not supported (no code execution containers here)",
};

/** The chat request as chat's pipeline reads it from the client (only ChatCompletionRequest keys). */
export function chatRequestJson(request: CreateMessageRequest, sent: JsonObject): JsonObject {
  const tools = chatTools(sent.tools);
  const thinking = request.thinking?.type ?? "disabled";
  const format = request.outputConfig?.format;
  const chat: JsonObject = {
    model: request.model,
    messages: [...systemMessages(sent.system), ...((sent.messages ?? []) as JsonValue[]).flatMap((m, i) => chatMessages(m as JsonObject, i))],
    max_tokens: request.maxTokens,
    // Anthropic's default temperature is 1, as chat's.
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.topP !== undefined ? { top_p: request.topP } : {}),
    // Anthropic's top_k 0 is "no top-k", as vLLM's -1.
    ...(request.topK !== undefined && request.topK > 0 ? { top_k: request.topK } : {}),
    ...(request.stopSequences.length > 0 ? { stop: request.stopSequences } : {}),
    ...(tools ? { tools, ...toolChoice(request) } : request.toolChoice && request.toolChoice.type !== "none" && request.toolChoice.type !== "auto" ? badToolChoice(request.toolChoice.type) : {}),
    ...(typeof request.metadata?.user_id === "string" ? { user: request.metadata.user_id } : {}),
    // Thinking on a reasoning model: the template's switch (Qwen3's `enable_thinking`), and the
    // <think> block comes back as a thinking content block, or is dropped when not asked for.
    include_reasoning: thinking !== "disabled",
    chat_template_kwargs: {
      enable_thinking: thinking !== "disabled",
      ...(request.outputConfig?.effort ? { reasoning_effort: request.outputConfig.effort } : {}),
    },
    ...(format ? { response_format: responseFormat(format) } : {}),
    ...(request.logprobs ? { logprobs: true } : {}),
    // Always: the stream's message_start reports input_tokens from the prompt's ids (the reply
    // carries ids only when the client asked, response.ts).
    return_token_ids: true,
  };
  return chat;
}

function systemMessages(system: JsonValue | undefined): JsonObject[] {
  if (system === undefined || system === null) return [];
  if (typeof system === "string") return system === "" ? [] : [{ role: "system", content: system }];
  if (!Array.isArray(system)) throw badRequest("system: expected a string or a list of text blocks");
  const texts = system.map((block, i) => {
    if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") throw badRequest(`system.${i}: expected a text block {"type": "text", "text": ...}`);
    return block.text;
  });
  return [{ role: "system", content: texts.join("\n") }];
}

/** One Anthropic turn as chat messages: tool results are tool messages of their own, in order. */
function chatMessages(message: JsonObject, index: number): JsonObject[] {
  const role = String(message.role);
  const content = message.content;
  if (typeof content === "string") return [{ role, content }];
  if (!Array.isArray(content)) throw badRequest(`messages.${index}.content: expected a string or a list of content blocks`);
  const out: JsonObject[] = [];
  let text: string[] = [];
  let reasoning = "";
  const calls: JsonObject[] = [];
  const flushText = () => {
    if (text.length > 0) out.push({ role, content: text.join("\n") });
    text = [];
  };
  content.forEach((block, b) => {
    const where = `messages.${index}.content.${b}`;
    if (!isObject(block) || typeof block.type !== "string") throw badRequest(`${where}: expected a content block with a "type"`);
    const type = block.type;
    if (UNSUPPORTED_BLOCKS[type]) throw badRequest(`${where}: ${type}: ${UNSUPPORTED_BLOCKS[type]}`);
    if (type === "text") {
      if (typeof block.text !== "string") throw badRequest(`${where}.text: expected a string`);
      text.push(block.text);
    } else if (type === "thinking") {
      if (role !== "assistant") throw badRequest(`${where}: thinking blocks belong to assistant messages`);
      if (typeof block.thinking !== "string") throw badRequest(`${where}.thinking: expected a string`);
      reasoning += block.thinking;
    } else if (type === "tool_use") {
      if (role !== "assistant") throw badRequest(`${where}: tool_use blocks belong to assistant messages`);
      if (typeof block.id !== "string" || typeof block.name !== "string") throw badRequest(`${where}: tool_use needs a string "id" and "name"`);
      calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    } else if (type === "tool_result") {
      if (role !== "user") throw badRequest(`${where}: tool_result blocks belong to user messages`);
      if (typeof block.tool_use_id !== "string") throw badRequest(`${where}.tool_use_id: expected a string`);
      flushText();
      out.push({ role: "tool", tool_call_id: block.tool_use_id, content: toolResultText(block.content, `${where}.content`) });
    } else throw badRequest(`${where}: content blocks of type "${type}" are not supported (text, tool_use, tool_result and thinking are)`);
  });
  if (role === "assistant") {
    // One assistant turn: its text, its reasoning and its calls together, as a chat assistant message.
    const assistant: JsonObject = { role, content: text.join("\n") };
    if (reasoning) assistant.reasoning_content = reasoning;
    if (calls.length > 0) assistant.tool_calls = calls;
    return [assistant];
  }
  flushText();
  return out;
}

function toolResultText(content: JsonValue | undefined, where: string): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw badRequest(`${where}: expected a string or a list of text blocks`);
  return content
    .map((block, i) => {
      if (isObject(block) && typeof block.type === "string" && UNSUPPORTED_BLOCKS[block.type]) throw badRequest(`${where}.${i}: ${block.type}: ${UNSUPPORTED_BLOCKS[block.type]}`);
      if (!isObject(block) || block.type !== "text" || typeof block.text !== "string") throw badRequest(`${where}.${i}: expected a text block`);
      return block.text;
    })
    .join("\n");
}

/** Client tools as chat functions; server tools (a versioned `type`) are refused. */
function chatTools(tools: JsonValue | undefined): JsonObject[] | null {
  if (!Array.isArray(tools) || tools.length === 0) return null;
  return tools.map((tool, i) => {
    if (!isObject(tool)) throw badRequest(`tools.${i}: expected a tool object`);
    const type = tool.type ?? "custom";
    if (type !== "custom") throw badRequest(`tools.${i}.type: server tools ("${String(type)}") are not available here; describe the tool with name, description and input_schema and run it yourself`);
    if (typeof tool.name !== "string" || tool.name === "") throw badRequest(`tools.${i}.name: Field required`);
    if (!isObject(tool.input_schema)) throw badRequest(`tools.${i}.input_schema: Field required (a JSON schema object)`);
    const fn: JsonObject = { name: tool.name, parameters: tool.input_schema };
    if (typeof tool.description === "string") fn.description = tool.description;
    return { type: "function", function: fn };
  });
}

function toolChoice(request: CreateMessageRequest): JsonObject {
  const choice = request.toolChoice;
  const parallel = !(choice?.disableParallelToolUse ?? false);
  // Anthropic's default with tools is "auto".
  switch (choice?.type ?? "auto") {
    case "none":
      return { tool_choice: "none" };
    case "any":
      return { tool_choice: "required", parallel_tool_calls: parallel };
    case "tool":
      if (!choice?.name) throw badRequest('tool_choice.name: Field required (tool_choice {"type": "tool"} names the tool)');
      return { tool_choice: { type: "function", function: { name: choice.name } }, parallel_tool_calls: parallel };
    default:
      return { tool_choice: "auto", parallel_tool_calls: parallel };
  }
}

function badToolChoice(type: string): never {
  throw badRequest(`tool_choice: {"type": "${type}"} needs tools`);
}

/** `output_config.format` -> chat's response_format. */
function responseFormat(format: JsonObject): JsonObject {
  if (format.type !== "json_schema" || !isObject(format.schema)) throw badRequest('output_config.format: expected {"type": "json_schema", "schema": {...}}');
  return { type: "json_schema", json_schema: { name: "output", schema: format.schema, strict: true } };
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
