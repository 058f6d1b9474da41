// REST JSON -> canonical protobuf JSON, with pydantic-style violations. Validation happens here,
// against the descriptor and the srl.v1 field rules; construction is then left to protobuf-es'
// fromJson. Unknown keys are ignored; `null` is accepted where the field is nullable.
import { ScalarType, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { Violation } from "../../core/errors.js";
import { checkBounds, checkItems, checkLiteral, checkStringBytes, checkUuid, checkValueBytes, missing, type Loc } from "../validation/checks.js";
import { fieldRule, restName, type FieldRule } from "../validation/rules.js";
import type { LosslessJson } from "./json-parse.js";

const INT32 = { min: -2147483648, max: 2147483647 };
const UINT32_MAX = 4294967295;

export interface DecodeResult {
  json: JsonObject;
  violations: Violation[];
}

/**
 * Decodes the fields of `desc` found in `input` (a JSON object). `skip` names fields bound elsewhere
 * (path parameters). Values from the query string arrive as strings and are coerced like pydantic
 * does for query parameters.
 */
export function decodeFields(
  desc: DescMessage,
  input: { [key: string]: LosslessJson },
  loc: Loc,
  violations: Violation[],
  skip: ReadonlySet<string> = new Set(),
): JsonObject {
  const out: JsonObject = {};
  for (const field of desc.fields) {
    if (skip.has(field.name)) continue;
    const key = restName(field);
    const rule = fieldRule(field);
    const value = input[key];
    const here = [...loc, key];
    if (value === undefined) {
      if (rule.required) violations.push(missing(here, plain(input)));
      continue;
    }
    if (value === null) {
      if (rule.nullable || isValueField(field)) continue;
      violations.push(typeViolation(field, here, null));
      continue;
    }
    const decoded = decodeField(field, rule, value, here, violations);
    if (decoded !== undefined) out[field.name] = decoded;
  }
  return out;
}

function decodeField(field: DescField, rule: FieldRule, value: LosslessJson, loc: Loc, violations: Violation[]): JsonValue | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return decodeScalar(field.scalar, rule, value, loc, violations);
    case "enum":
      return typeof value === "string" || typeof value === "number" ? value : (violations.push(typeViolation(field, loc, plain(value))), undefined);
    case "message":
      return decodeMessageValue(field.message, rule, value, loc, violations);
    case "list": {
      let items: LosslessJson[];
      if (Array.isArray(value)) items = value;
      else if (rule.stringOrList && typeof value === "string") items = [value];
      else {
        violations.push({ type: "list_type", loc, msg: "Input should be a valid list", input: plain(value) });
        return undefined;
      }
      const tooMany = checkItems(rule, items.length, loc, "List");
      if (tooMany) return (violations.push(tooMany), undefined);
      const out: JsonValue[] = [];
      items.forEach((item, index) => {
        const here = [...loc, index];
        const decoded =
          field.listKind === "scalar"
            ? decodeScalar(field.scalar, rule, item, here, violations)
            : field.listKind === "message"
              ? decodeMessageValue(field.message, rule, item, here, violations)
              : item === null
                ? undefined
                : plain(item);
        if (decoded !== undefined) out.push(decoded);
      });
      return out;
    }
    case "map": {
      if (!isObject(value)) {
        violations.push({ type: "dict_type", loc, msg: "Input should be a valid dictionary", input: plain(value) });
        return undefined;
      }
      const tooMany = checkItems(rule, Object.keys(value).length, loc, "Dictionary");
      if (tooMany) return (violations.push(tooMany), undefined);
      const out: JsonObject = {};
      for (const [key, item] of Object.entries(value)) {
        const decoded =
          field.mapKind === "scalar"
            ? decodeScalar(field.scalar, noRule, item, [...loc, key], violations)
            : field.mapKind === "message"
              ? decodeMessageValue(field.message, noRule, item, [...loc, key], violations)
              : plain(item);
        if (decoded !== undefined) out[key] = decoded;
      }
      return out;
    }
  }
}

function decodeMessageValue(desc: DescMessage, rule: FieldRule, value: LosslessJson, loc: Loc, violations: Violation[]): JsonValue | undefined {
  const tooLarge = checkValueBytes(rule, value, loc);
  if (tooLarge) return (violations.push(tooLarge), undefined);
  switch (desc.typeName) {
    case "google.protobuf.Struct":
      if (!isObject(value)) {
        violations.push({ type: "dict_type", loc, msg: "Input should be a valid dictionary", input: plain(value) });
        return undefined;
      }
      return plain(value);
    case "google.protobuf.ListValue":
      if (!Array.isArray(value)) {
        violations.push({ type: "list_type", loc, msg: "Input should be a valid list", input: plain(value) });
        return undefined;
      }
      return plain(value);
    case "google.protobuf.Value":
      return decodeFreeValue(rule, value, loc, violations);
  }
  if (!isObject(value)) {
    violations.push({
      type: "model_attributes_type",
      loc,
      msg: "Input should be a valid dictionary or object to extract fields from",
      input: plain(value),
    });
    return undefined;
  }
  return decodeFields(desc, value, loc, violations);
}

/** A free-form value (string-or-list, int-or-"auto", ...): strings against the literals, numbers against the bounds. */
function decodeFreeValue(rule: FieldRule, value: LosslessJson, loc: Loc, violations: Violation[]): JsonValue | undefined {
  if (typeof value === "string") {
    const violation = checkLiteral(rule, value, loc);
    if (violation) violations.push(violation);
  } else if (typeof value === "number" || typeof value === "bigint") {
    const violation = checkBounds(rule, value, loc, plain(value));
    if (violation) violations.push(violation);
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => {
      if (typeof item === "number") {
        const violation = checkBounds(rule, item, [...loc, index], item);
        if (violation) violations.push(violation);
      }
    });
  }
  return plain(value);
}

function decodeScalar(scalar: ScalarType, rule: FieldRule, value: LosslessJson, loc: Loc, violations: Violation[]): JsonValue | undefined {
  const fail = (violation: Violation | undefined) => {
    if (violation) violations.push(violation);
    return violation ? undefined : true;
  };
  switch (scalar) {
    case ScalarType.STRING: {
      if (typeof value !== "string") {
        return rule.uuid
          ? fail({ type: "uuid_type", loc, msg: "UUID input should be a string, bytes or UUID object", input: plain(value) })
          : fail({ type: "string_type", loc, msg: "Input should be a valid string", input: plain(value) });
      }
      if (rule.uuid && !fail(checkUuid(value, loc))) return undefined;
      if (!fail(checkLiteral(rule, value, loc))) return undefined;
      if (!fail(checkStringBytes(rule, value, loc))) return undefined;
      return value;
    }
    case ScalarType.BOOL:
      return decodeBool(value, loc, violations);
    case ScalarType.BYTES:
      return typeof value === "string" ? value : fail({ type: "bytes_type", loc, msg: "Input should be a valid string", input: plain(value) });
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const number = toNumber(value, loc, violations);
      if (number === undefined || !fail(checkBounds(rule, number, loc, plain(value)))) return undefined;
      return number;
    }
    default: {
      const integer = toInteger(value, loc, violations);
      if (integer === undefined) return undefined;
      const bounded = withTypeBounds(scalar, rule);
      if (!fail(checkBounds(bounded, integer, loc, plain(value)))) return undefined;
      // Canonical proto JSON carries 64-bit integers as strings, keeping every digit.
      return typeof integer === "bigint" || isSixtyFour(scalar) ? integer.toString() : integer;
    }
  }
}

function decodeBool(value: LosslessJson, loc: Loc, violations: Violation[]): boolean | undefined {
  if (typeof value === "boolean") return value;
  if (typeof value === "number" && (value === 0 || value === 1)) return value === 1;
  if (typeof value === "string") {
    const lowered = value.trim().toLowerCase();
    if (["true", "1", "yes", "on", "t", "y"].includes(lowered)) return true;
    if (["false", "0", "no", "off", "f", "n"].includes(lowered)) return false;
    violations.push({ type: "bool_parsing", loc, msg: "Input should be a valid boolean, unable to interpret input", input: value });
    return undefined;
  }
  violations.push({ type: "bool_type", loc, msg: "Input should be a valid boolean", input: plain(value) });
  return undefined;
}

/** A number no double holds (1e309), quoted as text: no JSON answer or protobuf value carries it. */
export function finiteNumberViolation(loc: Loc, input: string): Violation {
  return { type: "finite_number", loc, msg: "Input should be a finite number", input };
}

function toNumber(value: LosslessJson, loc: Loc, violations: Violation[]): number | undefined {
  const finite = (number: number) => {
    if (Number.isFinite(number)) return number;
    violations.push(finiteNumberViolation(loc, String(plain(value))));
    return undefined;
  };
  if (typeof value === "number") return finite(value);
  if (typeof value === "bigint") return finite(Number(value));
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "string") {
    const trimmed = value.trim();
    const number = trimmed === "" ? NaN : Number(trimmed);
    if (!Number.isNaN(number)) return finite(number);
    violations.push({ type: "float_parsing", loc, msg: "Input should be a valid number, unable to parse string as a number", input: value });
    return undefined;
  }
  violations.push({ type: "float_type", loc, msg: "Input should be a valid number", input: plain(value) });
  return undefined;
}

function toInteger(value: LosslessJson, loc: Loc, violations: Violation[]): number | bigint | undefined {
  if (typeof value === "bigint") return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number") {
    if (Number.isInteger(value)) return value;
    violations.push({ type: "int_from_float", loc, msg: "Input should be a valid integer, got a number with a fractional part", input: value });
    return undefined;
  }
  if (typeof value === "string") {
    const trimmed = value.trim();
    if (/^[+-]?\d+$/.test(trimmed)) {
      const big = BigInt(trimmed);
      return Number.isSafeInteger(Number(big)) ? Number(big) : big;
    }
    violations.push({ type: "int_parsing", loc, msg: "Input should be a valid integer, unable to parse string as an integer", input: value });
    return undefined;
  }
  violations.push({ type: "int_type", loc, msg: "Input should be a valid integer", input: plain(value) });
  return undefined;
}

/** The field's own bounds, narrowed to what its protobuf type can hold. */
function withTypeBounds(scalar: ScalarType, rule: FieldRule): FieldRule {
  let [min, max]: [number | bigint, number | bigint] = [-(2n ** 63n), 2n ** 63n - 1n];
  if (scalar === ScalarType.INT32 || scalar === ScalarType.SINT32 || scalar === ScalarType.SFIXED32) [min, max] = [INT32.min, INT32.max];
  else if (scalar === ScalarType.UINT32 || scalar === ScalarType.FIXED32) [min, max] = [0, UINT32_MAX];
  else if (scalar === ScalarType.UINT64 || scalar === ScalarType.FIXED64) [min, max] = [0n, 2n ** 64n - 1n];
  const ge = rule.ge ?? min;
  const le = rule.le ?? max;
  return { ...rule, ge, le };
}

function isSixtyFour(scalar: ScalarType): boolean {
  return [ScalarType.INT64, ScalarType.UINT64, ScalarType.FIXED64, ScalarType.SFIXED64, ScalarType.SINT64].includes(scalar);
}

function typeViolation(field: DescField, loc: Loc, input: JsonValue): Violation {
  if (field.fieldKind === "list") return { type: "list_type", loc, msg: "Input should be a valid list", input };
  if (field.fieldKind === "map") return { type: "dict_type", loc, msg: "Input should be a valid dictionary", input };
  if (field.fieldKind === "message") {
    if (field.message.typeName === "google.protobuf.Struct") return { type: "dict_type", loc, msg: "Input should be a valid dictionary", input };
    return { type: "model_attributes_type", loc, msg: "Input should be a valid dictionary or object to extract fields from", input };
  }
  if (field.fieldKind === "scalar") {
    switch (field.scalar) {
      case ScalarType.STRING:
        return { type: "string_type", loc, msg: "Input should be a valid string", input };
      case ScalarType.BOOL:
        return { type: "bool_type", loc, msg: "Input should be a valid boolean", input };
      case ScalarType.DOUBLE:
      case ScalarType.FLOAT:
        return { type: "float_type", loc, msg: "Input should be a valid number", input };
      default:
        return { type: "int_type", loc, msg: "Input should be a valid integer", input };
    }
  }
  return { type: "enum", loc, msg: "Input should be a valid enum value", input };
}

function isValueField(field: DescField): boolean {
  return field.fieldKind === "message" && field.message.typeName === "google.protobuf.Value";
}

function isObject(value: LosslessJson | undefined): value is { [key: string]: LosslessJson } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A parsed value as plain JSON (64-bit integers become numbers, or strings beyond a double's range). */
export function plain(value: LosslessJson): JsonValue {
  if (typeof value === "bigint") return Number(value);
  if (Array.isArray(value)) return value.map(plain);
  if (isObject(value)) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) out[key] = plain(item);
    return out;
  }
  return value;
}

const noRule: FieldRule = {
  required: false,
  nullable: false,
  uuid: false,
  ge: undefined,
  le: undefined,
  literal: [],
  stringOrList: false,
  defaultJson: undefined,
  maxItems: undefined,
  maxBytes: undefined,
  httpStatus: 0,
};
