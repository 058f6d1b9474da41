// W&B history rows as JSON: wandb-core writes each `run.log` as one line of `wandb-history.jsonl`,
// where a non-finite number is the bare token NaN, Infinity or -Infinity (as Python's json module
// writes it), which JSON.parse refuses. Rows are read back here with those tokens as numbers.

export type HistoryRow = Record<string, unknown>;

/** Strings (skipped as they are) or a bare non-finite token outside them. */
const NON_FINITE = /"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g;
const MARK = "\u0000wandb-non-finite:";

/** The row a history line holds, or null when it is not a JSON object. */
export function parseHistoryRow(line: string): HistoryRow | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    if (!/NaN|Infinity/.test(line)) return null;
    try {
      const marked = line.replace(NON_FINITE, (token) => (token.startsWith('"') ? token : JSON.stringify(MARK + token)));
      value = JSON.parse(marked, (_key, item: unknown) => (typeof item === "string" && item.startsWith(MARK) ? Number(item.slice(MARK.length)) : item));
    } catch {
      return null;
    }
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as HistoryRow) : null;
}

/** The row's `_step` (W&B's x-axis, increasing from one row to the next), or null. */
export function stepOf(row: HistoryRow | null): number | null {
  const step = row?._step;
  return typeof step === "number" && Number.isFinite(step) ? Math.trunc(step) : null;
}
