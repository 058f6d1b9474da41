// A trajectory drawn as a chat: the messages it was given (context) and the choices the model
// sampled (what trains), tool calls with their arguments, tool results, reasoning, and what it
// carried besides (reward, metrics, metadata, logs, extra histories).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { h } from "../dom.js";
import { formatNumber } from "../format.js";
import { contentText, isObject, listOf, numericMetrics } from "./shapes.js";

export function trajectoryCard(trajectory: JsonObject, label: string): HTMLElement {
  const reward = typeof trajectory.reward === "number" ? trajectory.reward : null;
  const metrics = numericMetrics(trajectory.metrics);
  const histories = listOf(trajectory.additional_histories).filter(isObject);
  const logs = listOf(trajectory.logs).map((line) => (typeof line === "string" ? line : JSON.stringify(line)));
  return h(
    "article",
    { class: "trajectory", "data-reward": reward === null ? "" : String(reward) },
    h("header", {}, h("span", { class: "trajectory-label" }, label), h("span", { class: "reward", title: "reward" }, reward === null ? "no reward" : `reward ${formatNumber(reward)}`)),
    metrics.length ? h("div", { class: "chips" }, ...metrics.map(([name, value]) => h("span", { class: "chip" }, `${name} ${formatNumber(value)}`))) : null,
    toolsOffered(trajectory.tools),
    chat(trajectory.messages_and_choices),
    exchanges(trajectory.exchanges),
    ...histories.map((history, i) => h("details", {}, h("summary", {}, `Additional history ${i + 1}`), toolsOffered(history.tools), chat(history.messages_and_choices))),
    isObject(trajectory.metadata) && Object.keys(trajectory.metadata).length ? h("details", {}, h("summary", {}, "Metadata"), h("pre", {}, JSON.stringify(trajectory.metadata, null, 2))) : null,
    logs.length ? h("details", {}, h("summary", {}, `Logs (${logs.length})`), h("pre", {}, logs.join("\n"))) : null,
  );
}

function chat(items: JsonValue | undefined): HTMLElement {
  const list = listOf(items);
  if (list.length === 0) return h("p", { class: "muted" }, "No messages.");
  return h("div", { class: "chat" }, ...list.map((item) => (isObject(item) ? (isObject(item.message) ? choiceBubble(item) : messageBubble(item)) : h("pre", {}, JSON.stringify(item)))));
}

function messageBubble(message: JsonObject): HTMLElement {
  const role = typeof message.role === "string" ? message.role : "?";
  const name = typeof message.name === "string" ? ` (${message.name})` : "";
  const toolCallId = typeof message.tool_call_id === "string" ? ` → ${message.tool_call_id}` : "";
  return h(
    "div",
    { class: `bubble role-${cssSafe(role)}`, "data-role": role },
    h("div", { class: "bubble-head" }, `${role}${name}${toolCallId}`),
    body(message),
  );
}

/** An OpenAI Choice: the model's sampled output, which is what RL trains on. */
function choiceBubble(choice: JsonObject): HTMLElement {
  const message = choice.message as JsonObject;
  const finish = typeof choice.finish_reason === "string" ? choice.finish_reason : null;
  const logprobs = isObject(choice.logprobs) ? listOf(choice.logprobs.content).length : 0;
  const facts = ["sampled", finish ? `finish: ${finish}` : null, logprobs ? `${logprobs} tokens with logprobs` : "no logprobs"].filter(Boolean).join(" · ");
  return h(
    "div",
    { class: "bubble role-assistant sampled", "data-role": "choice" },
    h("div", { class: "bubble-head" }, `${typeof message.role === "string" ? message.role : "assistant"} `, h("span", { class: "muted" }, facts)),
    body(message),
  );
}

function body(message: JsonObject): DocumentFragment {
  const parts = document.createDocumentFragment();
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === "string" && reasoning) parts.append(h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"), h("div", { class: "text" }, reasoning)));
  const text = contentText(message.content);
  if (text) parts.append(h("div", { class: "text" }, text));
  for (const call of listOf(message.tool_calls).filter(isObject)) {
    const fn = isObject(call.function) ? call.function : {};
    const name = typeof fn.name === "string" ? fn.name : "?";
    parts.append(h("div", { class: "tool-call", "data-tool-call": name }, h("span", { class: "tool-name" }, `${name}(`), h("code", {}, prettyArguments(fn.arguments)), h("span", { class: "tool-name" }, ")"), typeof call.id === "string" ? h("span", { class: "muted" }, ` ${call.id}`) : null));
  }
  if (!text && parts.childNodes.length === 0) parts.append(h("div", { class: "text muted" }, "(empty)"));
  return parts;
}

function prettyArguments(args: JsonValue | undefined): string {
  if (typeof args !== "string") return JSON.stringify(args ?? {});
  try {
    return JSON.stringify(JSON.parse(args));
  } catch {
    return args; // models write broken JSON too: show what they wrote
  }
}

function toolsOffered(tools: JsonValue | undefined): HTMLElement | null {
  const list = listOf(tools).filter(isObject);
  if (list.length === 0) return null;
  const names = list.map((tool) => (isObject(tool.function) && typeof tool.function.name === "string" ? tool.function.name : "?"));
  return h("details", { class: "tools" }, h("summary", {}, `Tools offered: ${names.join(", ")}`), h("pre", {}, JSON.stringify(list, null, 2)));
}

/** Recorded exchanges (clients that send these instead of messages_and_choices). */
function exchanges(value: JsonValue | undefined): HTMLElement | null {
  if (!isObject(value) || Object.values(value).every((list) => listOf(list).length === 0)) return null;
  return h("details", { open: "" }, h("summary", {}, "Recorded exchanges"), h("pre", {}, JSON.stringify(value, null, 2)));
}

function cssSafe(text: string): string {
  return text.replace(/[^a-z0-9_-]/gi, "_");
}
