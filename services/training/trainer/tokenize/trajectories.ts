// Trajectory groups as clients send them (spec §1.2-1.4, compat §3.1-3.3): every field optional
// (compact dumps omit defaults, older ones send nulls), unknown keys ignored, Choices detected
// structurally. Errors name the group / trajectory / item.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import { isObject, normalizeTools, parseItem, type HistoryItem } from "./messages.js";

export interface ParsedHistory {
  items: HistoryItem[];
  tools: JsonObject[] | null;
  /** Names the history in errors, e.g. "group 0 trajectory 2 additional_histories[0]". */
  where: string;
}

export interface ParsedTrajectory {
  reward: number;
  /** The primary history first, then each additional history (or one per exchange choice). */
  histories: ParsedHistory[];
}

export interface ParsedGroup {
  trajectories: ParsedTrajectory[];
}

export function parseTrajectoryGroups(groups: readonly JsonValue[]): ParsedGroup[] {
  return groups.map((group, g) => {
    const where = `trajectory_groups[${g}]`;
    if (!isObject(group)) throw new TrainingInputError(`${where}: expected an object`);
    const list = listOf(group.trajectories, `${where}.trajectories`);
    return { trajectories: list.map((t, i) => parseTrajectory(t, `${where}.trajectories[${i}]`)) };
  });
}

/** Rewards per group (trajectories only; exceptions are not trajectories), for §3.1. */
export function groupRewards(groups: readonly ParsedGroup[]): number[][] {
  return groups.map((g) => g.trajectories.map((t) => t.reward));
}

function parseTrajectory(value: JsonValue, where: string): ParsedTrajectory {
  if (!isObject(value)) throw new TrainingInputError(`${where}: expected an object`);
  const reward = value.reward ?? 0;
  if (typeof reward !== "number" || !Number.isFinite(reward)) throw new TrainingInputError(`${where}.reward: expected a finite number, got ${JSON.stringify(reward)}`);
  const histories = [parseHistory(value, where)];
  listOf(value.additional_histories, `${where}.additional_histories`).forEach((h, i) => {
    const at = `${where}.additional_histories[${i}]`;
    if (!isObject(h)) throw new TrainingInputError(`${at}: expected an object`);
    histories.push(parseHistory(h, at));
  });
  const fromExchanges = exchangeHistories(value.exchanges, `${where}.exchanges`);
  if (fromExchanges.length > 0) {
    if (histories.some((h) => h.items.length > 0)) throw new TrainingInputError(`${where}: "exchanges" cannot be combined with messages_and_choices or additional_histories`);
    return { reward, histories: fromExchanges };
  }
  return { reward, histories };
}

function parseHistory(value: JsonObject, where: string): ParsedHistory {
  const items = listOf(value.messages_and_choices, `${where}.messages_and_choices`).map((item, i) => parseItem(item, `${where}.messages_and_choices[${i}]`));
  return { items, tools: normalizeTools(value.tools, where), where };
}

/**
 * Newest ART records `exchanges.chat_completions: [{request, response}]` instead of
 * messages_and_choices. Each response choice becomes a history: the request's messages as context,
 * the choice as the trainable turn, the request's tools.
 */
function exchangeHistories(value: JsonValue | undefined, where: string): ParsedHistory[] {
  if (value === undefined || value === null) return [];
  if (!isObject(value)) throw new TrainingInputError(`${where}: expected an object`);
  for (const [kind, list] of Object.entries(value)) {
    if (kind !== "chat_completions" && Array.isArray(list) && list.length > 0) throw new TrainingInputError(`${where}.${kind}: only chat_completions exchanges can be trained here`);
  }
  const histories: ParsedHistory[] = [];
  listOf(value.chat_completions, `${where}.chat_completions`).forEach((exchange, e) => {
    const at = `${where}.chat_completions[${e}]`;
    if (!isObject(exchange) || !isObject(exchange.request) || !isObject(exchange.response)) throw new TrainingInputError(`${at}: needs "request" and "response" objects`);
    const { request, response } = exchange;
    const context = listOf(request.messages, `${at}.request.messages`).map((m, i) => parseItem(m, `${at}.request.messages[${i}]`));
    listOf(response.choices, `${at}.response.choices`).forEach((choice, c) => {
      const item = parseItem(choice, `${at}.response.choices[${c}]`);
      if (item.kind !== "choice") throw new TrainingInputError(`${at}.response.choices[${c}]: expected a Choice`);
      histories.push({ items: [...context, item], tools: normalizeTools(request.tools, `${at}.request`), where: `${at}.response.choices[${c}]` });
    });
  });
  return histories;
}

function listOf(value: JsonValue | undefined, where: string): JsonValue[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new TrainingInputError(`${where}: expected a list`);
  return value;
}
