// W&B's `Run.historyKeys`: the keys a run's history rows hold, with how many rows held each type,
// and the last step logged. `run.scan_history()` reads `lastStep` to know where to stop. Kept per
// run as JSON text (keys may hold '.' and '$', which database field names may not), updated as
// rows arrive.
import type { HistoryRow } from "./history-json.js";

/** key -> value type ("number", "string", "boolean", "map", "list", "nil", or a media `_type`) -> rows. */
export type KeyTypeCounts = Record<string, Record<string, number>>;

/** Adds the rows' keys (nested objects as `a.b`, as W&B names them) to `counts`, at most `maxKeys` keys. */
export function countHistoryKeys(counts: KeyTypeCounts, rows: readonly HistoryRow[], maxKeys: number): KeyTypeCounts {
  const next: KeyTypeCounts = { ...counts };
  let size = Object.keys(next).length;
  const add = (key: string, type: string) => {
    const known = next[key];
    if (!known && size >= maxKeys) return;
    if (!known) size++;
    next[key] = { ...known, [type]: (known?.[type] ?? 0) + 1 };
  };
  const visit = (value: Record<string, unknown>, prefix: string) => {
    for (const [name, item] of Object.entries(value)) {
      const key = prefix === "" ? name : `${prefix}.${name}`;
      if (typeof item === "object" && item !== null && !Array.isArray(item) && !("_type" in item)) visit(item as Record<string, unknown>, key);
      else add(key, typeName(item));
    }
  };
  for (const row of rows) visit(row, "");
  return next;
}

function typeName(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (Array.isArray(value)) return "list";
  if (typeof value === "object") {
    const media = (value as { _type?: unknown })._type;
    return typeof media === "string" ? media : "map";
  }
  return typeof value === "number" || typeof value === "bigint" ? "number" : typeof value;
}

/** W&B's answer: `{"keys": {key: {"typeCounts": [{"type", "count"}]}}, "lastStep": n}`. */
export function historyKeysAnswer(counts: KeyTypeCounts, lastStep: number): Record<string, unknown> {
  const keys = Object.fromEntries(Object.entries(counts).map(([key, types]) => [key, { typeCounts: Object.entries(types).map(([type, count]) => ({ type, count })) }]));
  return { keys, lastStep };
}

export function parseKeyTypeCounts(text: string | undefined): KeyTypeCounts {
  if (!text) return {};
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as KeyTypeCounts) : {};
  } catch {
    return {};
  }
}
