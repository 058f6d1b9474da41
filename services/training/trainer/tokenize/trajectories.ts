// Trajectory groups as clients send them (spec §1.2-1.4, compat §3.1-3.3): every field optional
// (compact dumps omit defaults, older ones send nulls), unknown keys ignored, Choices detected
// structurally; ART 0.5.23's `exchanges` are read into captured turns (./exchanges). Errors name
// the group / trajectory / item.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import type { CapturedTurn } from "./exchange-captured-turn.js";
import { selectTurns, type TrainedModel } from "./exchange-select-turns.js";
import { isObject, listOf, normalizeTools, parseItem, type HistoryItem } from "./messages.js";

export interface ParsedHistory {
  items: HistoryItem[];
  tools: JsonObject[] | null;
  /** Names the history in errors, e.g. "group 0 trajectory 2 additional_histories[0]". */
  where: string;
}

export interface ParsedTrajectory {
  reward: number;
  /** The primary history first, then each additional history (none when it has exchanges). */
  histories: ParsedHistory[];
  /** The trained model's captured exchanges, in time order (none for a messages_and_choices trajectory). */
  turns: CapturedTurn[];
  where: string;
}

export interface ParsedGroup {
  trajectories: ParsedTrajectory[];
}

/** trained: the job's model, which selects the exchanges to train (null: exactly one model may appear). */
export function parseTrajectoryGroups(groups: readonly JsonValue[], trained: TrainedModel | null = null): ParsedGroup[] {
  return groups.map((group, g) => {
    const where = `trajectory_groups[${g}]`;
    if (!isObject(group)) throw new TrainingInputError(`${where}: expected an object`);
    const list = listOf(group.trajectories, `${where}.trajectories`);
    return { trajectories: list.map((t, i) => parseTrajectory(t, `${where}.trajectories[${i}]`, trained)) };
  });
}

/** Rewards per group (trajectories only; exceptions are not trajectories), for §3.1. */
export function groupRewards(groups: readonly ParsedGroup[]): number[][] {
  return groups.map((g) => g.trajectories.map((t) => t.reward));
}

function parseTrajectory(value: JsonValue, where: string, trained: TrainedModel | null): ParsedTrajectory {
  if (!isObject(value)) throw new TrainingInputError(`${where}: expected an object`);
  const reward = value.reward ?? 0;
  if (typeof reward !== "number" || !Number.isFinite(reward)) throw new TrainingInputError(`${where}.reward: expected a finite number, got ${JSON.stringify(reward)}`);
  const histories = [parseHistory(value, where)];
  listOf(value.additional_histories, `${where}.additional_histories`).forEach((h, i) => {
    const at = `${where}.additional_histories[${i}]`;
    if (!isObject(h)) throw new TrainingInputError(`${at}: expected an object`);
    histories.push(parseHistory(h, at));
  });
  const turns = selectTurns(value.exchanges, `${where}.exchanges`, trained);
  if (turns.length > 0) {
    // ART 0.5.23 _require_unmixed: a trajectory is either captured exchanges or histories.
    if (histories.some((h) => h.items.length > 0) || histories[0]!.tools !== null) throw new TrainingInputError(`${where}: "exchanges" cannot be combined with messages_and_choices, tools or additional_histories`);
    return { reward, histories: [], turns, where };
  }
  return { reward, histories, turns: [], where };
}

function parseHistory(value: JsonObject, where: string): ParsedHistory {
  const items = listOf(value.messages_and_choices, `${where}.messages_and_choices`).map((item, i) => parseItem(item, `${where}.messages_and_choices[${i}]`));
  return { items, tools: normalizeTools(value.tools, where), where };
}
