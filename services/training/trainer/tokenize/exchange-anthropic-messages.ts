// An Anthropic `/v1/messages` exchange as ART 0.5.23 converts it to chat form
// (art/trajectories/_tokenize.py `_anthropic_messages`, `_response_message`, `_messages_tokens`):
// `system` is a system message; content blocks give text, thinking (reasoning), tool_use (an
// assistant tool call with JSON arguments) and tool_result (a tool message); tools with
// `input_schema` become chat tools. The response's content blocks make the assistant turn. Exact
// ids come from the response's `prompt_token_ids` / `token_ids` with `logprobs` (floats) when an
// inference server adds them; Anthropic's own API sends none, so such a turn has no sampled tokens.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import { isObject, listOf } from "./messages.js";
import { choiceItem, exchangeModel, exchangeTimes, logprobOf, optionalIds, requestAndResponse, sampledFromIds, type CapturedTurn, type ExactTokens } from "./exchange-captured-turn.js";

export function anthropicMessagesTurn(exchange: JsonValue, where: string): CapturedTurn {
  const { request, response } = requestAndResponse(exchange, where);
  const [message] = anthropicMessages({ messages: [{ role: "assistant", content: response.content ?? [] }] }, `${where}.response`);
  if (!message) throw new TrainingInputError(`${where}.response: no assistant content`);
  const ids = outputIds(response, `${where}.response`);
  const promptIds = optionalIds(response.prompt_token_ids, `${where}.response.prompt_token_ids`, true);
  const exact: ExactTokens | null = promptIds && ids ? { promptIds, outputIds: ids.ids, logprobs: ids.logprobs, hasLogprobs: ids.hasLogprobs } : null;
  const sampled = ids && ids.hasLogprobs ? sampledFromIds(ids.ids, ids.logprobs) : null;
  return {
    kind: "messages",
    model: exchangeModel(request, response),
    ...exchangeTimes(exchange as JsonObject),
    messages: anthropicMessages(request, `${where}.request`),
    tools: anthropicTools(request.tools),
    outputs: [{ choice: choiceItem(message, sampled, exact), exact, text: null, where: `${where}.response` }],
    where,
  };
}

function outputIds(response: JsonObject, where: string): { ids: number[]; logprobs: (number | null)[]; hasLogprobs: boolean } | null {
  let ids = optionalIds(response.token_ids, `${where}.token_ids`);
  if (ids?.length === 0 && Array.isArray(response.content) && response.content.length > 0) ids = null;
  if (!ids) return null;
  const values = listOf(response.logprobs, `${where}.logprobs`).map(logprobOf);
  if (values.length > 0 && values.length !== ids.length) throw new TrainingInputError(`${where}: token_ids and logprobs differ in length`);
  return { ids, logprobs: values.length > 0 ? values : ids.map(() => null), hasLogprobs: values.length > 0 };
}

function anthropicMessages(request: JsonObject, where: string): JsonObject[] {
  const messages: JsonObject[] = [];
  const system = request.system;
  if (system) messages.push({ role: "system", content: contentText(system) });
  for (const [i, raw] of listOf(request.messages, `${where}.messages`).entries()) {
    if (!isObject(raw)) continue;
    const role = typeof raw.role === "string" ? raw.role : "user";
    if (typeof raw.content === "string") {
      messages.push({ role, content: raw.content });
      continue;
    }
    let text = "";
    let reasoning = "";
    const toolCalls: JsonObject[] = [];
    for (const block of Array.isArray(raw.content) ? raw.content : []) {
      if (!isObject(block)) continue;
      if (block.type === "text") text += typeof block.text === "string" ? block.text : "";
      else if (block.type === "thinking") reasoning += typeof block.thinking === "string" ? block.thinking : "";
      else if (block.type === "tool_use") toolCalls.push({ id: block.id ?? null, type: "function", function: { name: block.name ?? null, arguments: JSON.stringify(block.input ?? {}) } });
      else if (block.type === "tool_result") {
        if (text) messages.push({ role, content: text });
        text = "";
        const result = block.content ?? "";
        messages.push({ role: "tool", tool_call_id: block.tool_use_id ?? block.id ?? null, content: typeof result === "string" ? result : contentText(result) });
      } else throw new TrainingInputError(`${where}.messages[${i}]: unsupported Anthropic content block type ${JSON.stringify(block.type ?? null)}`);
    }
    if (text || reasoning || toolCalls.length > 0 || role === "assistant") {
      messages.push({ role, content: text, ...(reasoning ? { reasoning } : {}), ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) });
    }
  }
  return messages;
}

/** Anthropic tools ({name, description, input_schema}) as chat tools (ART `_openai_tools`, dialect "messages"). */
function anthropicTools(tools: JsonValue | undefined): JsonObject[] | null {
  if (!Array.isArray(tools)) return null;
  return tools.filter(isObject).map((tool) => {
    if ((tool.type ?? "function") !== "function") return tool;
    const fn: JsonObject = {};
    for (const [key, value] of [["name", tool.name], ["description", tool.description], ["parameters", tool.input_schema ?? {}]] as const) if (value !== undefined && value !== null) fn[key] = value;
    return { type: "function", function: fn };
  });
}

function contentText(content: JsonValue): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((block) => (isObject(block) && ["input_text", "output_text", "text"].includes(String(block.type)) && typeof block.text === "string" ? block.text : "")).join("");
}
