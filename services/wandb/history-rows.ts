// W&B history lines (`wandb-history.jsonl`: one JSON object per `run.log`) as the service's metric
// history: every finite number (nested objects flattened with '.', booleans as 0/1) except W&B's
// own `_` keys. The step is ART's x-axis `training_step` when the line has it (ART logs it with
// every metric and defines it as their step metric), else W&B's `_step`. The split is the name's
// first part when that is train, val or test, else "history".
const SPLITS = new Set(["train", "val", "test"]);
const STEP_METRIC = "training_step";

export interface HistoryPoint {
  step: number;
  split: string;
  values: Record<string, number>;
}

export function historyMetrics(lines: readonly string[]): HistoryPoint[] {
  const points: HistoryPoint[] = [];
  for (const line of lines) {
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      continue; // a line the SDK could not have written; the rest still count
    }
    if (typeof row !== "object" || row === null || Array.isArray(row)) continue;
    const fields = row as Record<string, unknown>;
    const numbers: Record<string, number> = {};
    flatten(fields, "", numbers);
    const stepValue = numbers[STEP_METRIC] ?? (typeof fields._step === "number" ? fields._step : 0);
    const step = Number.isSafeInteger(stepValue) ? stepValue : Math.trunc(stepValue);
    const bySplit = new Map<string, Record<string, number>>();
    for (const [name, value] of Object.entries(numbers)) {
      const head = name.split("/")[0] ?? name;
      const split = name.includes("/") && SPLITS.has(head) ? head : "history";
      // In place: a copy per name was quadratic (a row of 20,000 metrics held the event loop for a minute).
      const values = bySplit.get(split) ?? {};
      values[name] = value;
      bySplit.set(split, values);
    }
    for (const [split, values] of bySplit) points.push({ step, split, values });
  }
  return points;
}

/** The numbers of a W&B summary (`wandb-summary.json`), flattened as history rows are. */
export function summaryNumbers(summary: string): Record<string, number> {
  const numbers: Record<string, number> = {};
  try {
    const value: unknown = JSON.parse(summary);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) flatten(value as Record<string, unknown>, "", numbers);
  } catch {
    // not JSON: nothing to merge
  }
  return numbers;
}

function flatten(value: Record<string, unknown>, prefix: string, into: Record<string, number>): void {
  for (const [key, item] of Object.entries(value)) {
    if (prefix === "" && key.startsWith("_")) continue;
    const name = prefix === "" ? key : `${prefix}.${key}`;
    if (typeof item === "number" && Number.isFinite(item)) into[name] = item;
    else if (typeof item === "boolean") into[name] = item ? 1 : 0;
    else if (typeof item === "object" && item !== null && !Array.isArray(item) && !("_type" in item)) flatten(item as Record<string, unknown>, name, into);
  }
}
