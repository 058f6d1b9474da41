// Leaf checks shared by the REST decoder and the message validator, with pydantic's error types and
// messages so clients see the same detail whichever protocol they use.
import type { JsonValue } from "@bufbuild/protobuf";
import { expectedLiterals, type Violation } from "../../core/errors.js";
import { jsonBytes, type SizedJson } from "./json-size.js";
import type { FieldRule } from "./rules.js";

export type Loc = (string | number)[];

export function missing(loc: Loc, input: JsonValue | undefined): Violation {
  return { type: "missing", loc, msg: "Field required", input: input ?? null };
}

export function checkLiteral(rule: FieldRule, value: string, loc: Loc): Violation | undefined {
  if (rule.literal.length === 0 || rule.literal.includes(value)) return undefined;
  const expected = expectedLiterals(rule.literal);
  return { type: "literal_error", loc, msg: `Input should be ${expected}`, input: value, ctx: { expected } };
}

export function checkBounds(rule: FieldRule, value: number | bigint, loc: Loc, input: JsonValue): Violation | undefined {
  if (rule.ge !== undefined && compare(value, rule.ge) < 0) {
    return { type: "greater_than_equal", loc, msg: `Input should be greater than or equal to ${rule.ge}`, input, ctx: { ge: boundJson(rule.ge) } };
  }
  if (rule.le !== undefined && compare(value, rule.le) > 0) {
    return { type: "less_than_equal", loc, msg: `Input should be less than or equal to ${rule.le}`, input, ctx: { le: boundJson(rule.le) } };
  }
  return undefined;
}

const uuidPattern = /^(urn:uuid:)?[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;

/** Like pydantic's uuid_parsing, which reports the first bad character or the wrong length. */
export function checkUuid(value: string, loc: Loc): Violation | undefined {
  if (uuidPattern.test(value)) return undefined;
  const body = value.startsWith("urn:uuid:") ? value.slice(9) : value;
  const bad = [...body].findIndex((c) => !/[0-9a-fA-F-]/.test(c));
  const reason =
    bad >= 0
      ? `invalid character: expected an optional prefix of \`urn:uuid:\` followed by [0-9a-fA-F-], found \`${body[bad]}\` at ${bad + 1}`
      : `invalid length: expected length 32 for simple format, found ${body.replace(/-/g, "").length}`;
  return { type: "uuid_parsing", loc, msg: `Input should be a valid UUID, ${reason}`, input: value, ctx: { error: reason } };
}

function compare(a: number | bigint, b: number | bigint): number {
  if (typeof a === "bigint" || typeof b === "bigint") {
    const ai = typeof a === "bigint" ? a : BigInt(Math.trunc(a));
    const bi = typeof b === "bigint" ? b : BigInt(Math.trunc(b));
    if (ai !== bi) return ai < bi ? -1 : 1;
    // Equal integer parts: a fractional number still compares by its fraction.
    return typeof a === "number" ? Math.sign(a - Math.trunc(a)) : 0;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

function boundJson(bound: number | bigint): JsonValue {
  // A 64-bit bound prints as the nearest double, as the published API documents it.
  return Number(bound);
}

/** `max_items`: the count is checked before any entry is read (`input` summarises, never echoes, a long list). */
export function checkItems(rule: FieldRule, count: number, loc: Loc, kind: "List" | "Dictionary"): Violation | undefined {
  if (rule.maxItems === undefined || count <= rule.maxItems) return undefined;
  const unit = kind === "List" ? "items" : "keys";
  return {
    type: "too_long",
    loc,
    msg: `${kind} should have at most ${rule.maxItems} ${rule.maxItems === 1 ? unit.slice(0, -1) : unit} after validation, not ${count}`,
    input: `<${count} ${unit}>`,
    ctx: { field_type: kind, max_length: rule.maxItems, actual_length: count },
  };
}

/** `max_bytes` of a string: its UTF-8 bytes. */
export function checkStringBytes(rule: FieldRule, value: string, loc: Loc): Violation | undefined {
  // A string of n UTF-16 units has at most 3n UTF-8 bytes: most strings need no count at all.
  if (rule.maxBytes === undefined || value.length * 3 <= rule.maxBytes) return undefined;
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes <= rule.maxBytes) return undefined;
  return { type: "string_too_long", loc, msg: `String should have at most ${rule.maxBytes} bytes (UTF-8), not ${bytes}`, input: `<a string of ${bytes} bytes>`, ctx: { max_length: rule.maxBytes } };
}

/** `max_bytes` of a structured value: its JSON size (json-size.ts). */
export function checkValueBytes(rule: FieldRule, value: SizedJson | undefined, loc: Loc): Violation | undefined {
  if (rule.maxBytes === undefined) return undefined;
  const bytes = jsonBytes(value, rule.maxBytes);
  if (bytes <= rule.maxBytes) return undefined;
  return { type: "bytes_too_long", loc, msg: `Data should have at most ${rule.maxBytes} bytes (its JSON)`, input: "<a value too large to echo>", ctx: { max_length: rule.maxBytes } };
}
