// The prompt set as a person writes it: one prompt a line, or JSONL lines
// `{"prompt": "...", "expected": "..."}` (the two may mix). Checked here, with the line of each
// problem, before anything is sent; the limits are the API's (1-200 items, 20,000 bytes a field).

export interface PromptItem {
  prompt: string;
  expected?: string;
}

export type PromptSet = { items: PromptItem[]; problems: [] } | { items: PromptItem[]; problems: string[] };

export const MAX_ITEMS = 200;
const MAX_BYTES = 20_000;
const bytes = (text: string) => new TextEncoder().encode(text).length;

export function parsePromptSet(text: string): PromptSet {
  const items: PromptItem[] = [];
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === "") return;
    const where = `Line ${index + 1}`;
    const item = line.startsWith("{") ? jsonItem(line, where, problems) : { prompt: line };
    if (!item) return;
    if (bytes(item.prompt) > MAX_BYTES) problems.push(`${where}: the prompt is over ${MAX_BYTES.toLocaleString("en")} bytes.`);
    if (item.expected !== undefined && bytes(item.expected) > MAX_BYTES) problems.push(`${where}: "expected" is over ${MAX_BYTES.toLocaleString("en")} bytes.`);
    items.push(item);
  });
  if (items.length === 0 && problems.length === 0) problems.push("Add at least one prompt: one a line, or JSONL lines {\"prompt\": \"…\", \"expected\": \"…\"}.");
  if (items.length > MAX_ITEMS) problems.push(`${items.length} prompts: at most ${MAX_ITEMS} run in one evaluation.`);
  return { items, problems };
}

function jsonItem(line: string, where: string, problems: string[]): PromptItem | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    problems.push(`${where}: not valid JSON (${error instanceof Error ? error.message : String(error)}). A line starting with { must be a JSON object; write plain prompts without one.`);
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problems.push(`${where}: a JSON line must be an object like {"prompt": "…", "expected": "…"}.`);
    return null;
  }
  const record = value as Record<string, unknown>;
  const unknownKeys = Object.keys(record).filter((key) => key !== "prompt" && key !== "expected");
  if (typeof record.prompt !== "string" || record.prompt.trim() === "") {
    problems.push(`${where}: needs "prompt", a non-empty string.`);
    return null;
  }
  if (unknownKeys.length > 0) problems.push(`${where}: unknown ${unknownKeys.length === 1 ? "key" : "keys"} ${unknownKeys.map((key) => `"${key}"`).join(", ")} (only "prompt" and "expected").`);
  if (record.expected === undefined || record.expected === null) return { prompt: record.prompt };
  if (typeof record.expected !== "string") {
    problems.push(`${where}: "expected" must be a string (write numbers as "42").`);
    return null;
  }
  return { prompt: record.prompt, expected: record.expected };
}

/** How many items have no `expected` (exact match needs one on every item). */
export function missingExpected(items: readonly PromptItem[]): number {
  return items.filter((item) => item.expected === undefined).length;
}
