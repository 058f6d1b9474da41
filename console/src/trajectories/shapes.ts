// Reading stored trajectory groups for display. They are kept exactly as clients sent them, so
// nothing here assumes a field is present or of the right type: what cannot be read is shown raw.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

export interface TrajectoryRow {
  /** Position of the group in its batch, and of the trajectory in its group. */
  groupIndex: number;
  index: number;
  reward: number | null;
  trajectory: JsonObject;
}

export interface GroupSummary {
  index: number;
  group: JsonObject;
  rows: TrajectoryRow[];
  exceptions: JsonObject[];
  mean: number | null;
  /** Population standard deviation, as ART's `reward_std_dev`. */
  std: number | null;
  min: number | null;
  max: number | null;
}

export function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function listOf(value: JsonValue | undefined): JsonValue[] {
  return Array.isArray(value) ? value : [];
}

export function summarize(index: number, group: JsonObject): GroupSummary {
  const rows = listOf(group.trajectories)
    .filter(isObject)
    .map((trajectory, position) => ({ groupIndex: index, index: position, reward: typeof trajectory.reward === "number" ? trajectory.reward : null, trajectory }));
  const rewards = rows.flatMap((row) => (row.reward === null ? [] : [row.reward]));
  const { mean, std } = meanAndStd(rewards);
  return {
    index,
    group,
    rows,
    exceptions: listOf(group.exceptions).filter(isObject),
    mean,
    std,
    min: rewards.length ? Math.min(...rewards) : null,
    max: rewards.length ? Math.max(...rewards) : null,
  };
}

/** Mean and population standard deviation (ART's `reward_std_dev`); null for no values. */
export function meanAndStd(values: readonly number[]): { mean: number | null; std: number | null } {
  if (values.length === 0) return { mean: null, std: null };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return { mean, std: Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length) };
}

/** The text of a message's content: a string, or the text parts of a list (others named). */
export function contentText(content: JsonValue | undefined): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (!isObject(part)) return String(part);
        if (typeof part.text === "string") return part.text;
        if (typeof part.refusal === "string") return `[refusal] ${part.refusal}`;
        return `[${typeof part.type === "string" ? part.type : "part"}]`;
      })
      .join("\n");
  }
  return JSON.stringify(content);
}

/** Every string found in a trajectory's messages, lower-cased, for the text filter. */
export function searchableText(trajectory: JsonObject): string {
  const texts: string[] = [];
  const walk = (value: JsonValue | undefined) => {
    if (typeof value === "string") texts.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (isObject(value)) Object.values(value).forEach(walk);
  };
  walk(trajectory.messages_and_choices);
  walk(trajectory.metadata);
  return texts.join("\n").toLowerCase();
}

/** The numeric metrics of a trajectory (booleans as 0/1, as the log's metrics count them). */
export function numericMetrics(value: JsonValue | undefined): [string, number][] {
  if (!isObject(value)) return [];
  return Object.entries(value).flatMap(([name, v]) => (typeof v === "number" ? [[name, v] as [string, number]] : typeof v === "boolean" ? [[name, v ? 1 : 0] as [string, number]] : []));
}
