// Validates a decoded request message against the srl.v1 field rules. This is what gRPC and
// Connect requests get (their bytes were already decoded by protobuf); REST requests get the same
// checks, with pydantic's type errors on top, from rest/json-decode.ts.
import { toJson, type DescField, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { Violation } from "../../core/errors.js";
import { checkBounds, checkItems, checkLiteral, checkStringBytes, checkUuid, checkValueBytes, missing, type Loc } from "./checks.js";
import { fieldRule, restName } from "./rules.js";

export function validateMessage(desc: DescMessage, message: Message, locOf: (field: DescField) => Loc): Violation[] {
  const violations: Violation[] = [];
  for (const field of desc.fields) visitField(field, read(message, field), locOf(field), violations);
  return violations;
}

function visitMessage(desc: DescMessage, message: Message, loc: Loc, violations: Violation[]): void {
  for (const field of desc.fields) visitField(field, read(message, field), [...loc, restName(field)], violations);
}

function visitField(field: DescField, value: unknown, loc: Loc, violations: Violation[]): void {
  const rule = fieldRule(field);
  const unset = value === undefined || (field.fieldKind === "scalar" && field.presence === 2 && isZero(value));
  if (unset) {
    if (rule.required && field.fieldKind !== "list" && field.fieldKind !== "map") violations.push(missing(loc, null));
    return;
  }
  switch (field.fieldKind) {
    case "scalar":
      checkScalar(field, value, loc, violations);
      return;
    case "message":
      checkMessageValue(field, field.message, value, loc, violations);
      return;
    case "list": {
      if (!Array.isArray(value)) return;
      const tooMany = checkItems(rule, value.length, loc, "List");
      if (tooMany) return void violations.push(tooMany);
      value.forEach((item: unknown, index) => {
        if (field.listKind === "scalar") checkScalar(field, item, [...loc, index], violations);
        else if (field.listKind === "message") checkMessageValue(field, field.message, item, [...loc, index], violations);
      });
      return;
    }
    case "map": {
      const tooMany = typeof value === "object" && value !== null ? checkItems(rule, Object.keys(value).length, loc, "Dictionary") : undefined;
      if (tooMany) violations.push(tooMany);
      return;
    }
    default:
      return;
  }
}

function checkScalar(field: DescField, value: unknown, loc: Loc, violations: Violation[]): void {
  const rule = fieldRule(field);
  let violation: Violation | undefined;
  if (typeof value === "string") {
    violation = (rule.uuid ? checkUuid(value, loc) : undefined) ?? checkLiteral(rule, value, loc) ?? checkStringBytes(rule, value, loc);
  } else if (typeof value === "number" || typeof value === "bigint") {
    violation = checkBounds(rule, value, loc, typeof value === "bigint" ? Number(value) : value);
  }
  if (violation) violations.push(violation);
}

function checkMessageValue(field: DescField, desc: DescMessage, value: unknown, loc: Loc, violations: Violation[]): void {
  const tooLarge = fieldRule(field).maxBytes === undefined ? undefined : checkValueBytes(fieldRule(field), asJson(desc, value), loc);
  if (tooLarge) return void violations.push(tooLarge);
  if (desc.typeName === "google.protobuf.Value") {
    const json = valueToJson(value as Value);
    const rule = fieldRule(field);
    const violation =
      typeof json === "string" ? checkLiteral(rule, json, loc) : typeof json === "number" ? checkBounds(rule, json, loc, json) : undefined;
    if (violation) violations.push(violation);
    return;
  }
  if (desc.typeName.startsWith("google.protobuf.")) return;
  visitMessage(desc, value as Message, loc, violations);
}

function read(message: Message, field: DescField): unknown {
  const value = (message as unknown as Record<string, unknown>)[field.localName];
  return value;
}

/** A message field's value as JSON, as REST would carry it (Struct fields already are JSON). */
function asJson(desc: DescMessage, value: unknown): JsonValue {
  if (desc.typeName === "google.protobuf.Struct") return value as JsonValue;
  if (desc.typeName === "google.protobuf.Value") return toJson(ValueSchema, value as Value);
  return toJson(desc, value as Message, { useProtoFieldName: true });
}

function isZero(value: unknown): boolean {
  return value === "" || value === 0 || value === 0n || value === false;
}

function valueToJson(value: Value): JsonValue | undefined {
  switch (value.kind.case) {
    case "stringValue":
      return value.kind.value;
    case "numberValue":
      return value.kind.value;
    default:
      return undefined;
  }
}
