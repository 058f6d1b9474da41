// What an error may echo of a request: enough to see what was wrong, never the request again (a
// 1 MiB name or a 60 MB body). README "Errors" documents these limits.
import type { JsonValue } from "@bufbuild/protobuf";

/** Characters of one string kept in an echo or a message. */
export const ECHO_STRING_CHARS = 256;
/** Items of a list, or keys of an object, kept in an echo. */
export const ECHO_ITEMS = 32;
/** Levels of nesting kept in an echo. */
export const ECHO_DEPTH = 6;
/** JSON characters of one echoed input, after the cuts above; beyond it the input is summarised. */
export const ECHO_TOTAL_CHARS = 4096;
/** Characters of an error message. */
export const MESSAGE_CHARS = 2048;

/** `text` cut to `max` characters, saying how many were left out. */
export function clipText(text: string, max = ECHO_STRING_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}…[${text.length - max} more characters]`;
}

/** A user input as an error may quote it: JSON-quoted and clipped. */
export function quoted(text: string, max = 64): string {
  return JSON.stringify(clipText(text, max));
}

/** A JSON value cut down for an error body (strings, lists, objects, depth, total size). */
export function clipJson(value: JsonValue): JsonValue {
  const clipped = clipValue(value, 0);
  const size = JSON.stringify(clipped).length;
  return size <= ECHO_TOTAL_CHARS ? clipped : `<${describe(value)}, too long to echo>`;
}

function clipValue(value: JsonValue, depth: number): JsonValue {
  if (typeof value === "string") return clipText(value);
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (value === null || typeof value !== "object") return value;
  if (depth >= ECHO_DEPTH) return `<${describe(value)}>`;
  if (Array.isArray(value)) {
    const items = value.slice(0, ECHO_ITEMS).map((item) => clipValue(item, depth + 1));
    if (value.length > ECHO_ITEMS) items.push(`…[${value.length - ECHO_ITEMS} more items]`);
    return items;
  }
  const entries = Object.entries(value);
  const out: { [key: string]: JsonValue } = {};
  for (const [key, item] of entries.slice(0, ECHO_ITEMS)) out[clipText(key)] = clipValue(item, depth + 1);
  if (entries.length > ECHO_ITEMS) out["…"] = `${entries.length - ECHO_ITEMS} more keys`;
  return out;
}

function describe(value: JsonValue): string {
  if (Array.isArray(value)) return `a list of ${value.length} items`;
  if (typeof value === "object" && value !== null) return `an object of ${Object.keys(value).length} keys`;
  return typeof value;
}
