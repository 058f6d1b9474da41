// Protobuf message -> the JSON REST clients expect: snake_case names (or an explicit json_name),
// integers as numbers, unset optional fields as null, empty nullable lists as null, free-form
// objects as objects.
import { toJson, type DescField, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { fieldRule, isInt64, restName } from "../validation/rules.js";

export function encodeMessage<Desc extends DescMessage>(desc: Desc, message: MessageShape<Desc>): JsonObject {
  const json = toJson(desc, message, { useProtoFieldName: true, alwaysEmitImplicit: true });
  return shape(desc, isObject(json) ? json : {});
}

function shape(desc: DescMessage, json: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const field of desc.fields) {
    const value = json[field.name];
    out[restName(field)] = value === undefined ? absent(field) : shapeField(field, value);
  }
  return out;
}

function absent(field: DescField): JsonValue {
  if (field.fieldKind === "list") return fieldRule(field).nullable ? null : [];
  if (field.fieldKind === "map") return {};
  return null;
}

function shapeField(field: DescField, value: JsonValue): JsonValue {
  switch (field.fieldKind) {
    case "scalar":
      return isInt64(field) ? numeric(value) : value;
    case "enum":
      return value;
    case "message":
      return isWellKnownJson(field.message) || !isObject(value) ? value : shape(field.message, value);
    case "list": {
      if (!Array.isArray(value)) return value;
      if (value.length === 0 && fieldRule(field).nullable) return null;
      if (field.listKind === "message" && !isWellKnownJson(field.message)) {
        const message = field.message;
        return value.map((item) => (isObject(item) ? shape(message, item) : item));
      }
      return isInt64(field) ? value.map(numeric) : value;
    }
    case "map": {
      if (!isObject(value)) return value;
      const out: JsonObject = {};
      for (const [key, item] of Object.entries(value)) {
        out[key] =
          field.mapKind === "message" && !isWellKnownJson(field.message) && isObject(item) ? shape(field.message, item) : item;
      }
      return out;
    }
  }
}

/** 64-bit integers arrive from toJson as strings; REST clients expect numbers. */
function numeric(value: JsonValue): JsonValue {
  return typeof value === "string" && /^-?\d+$/.test(value) ? Number(value) : value;
}

function isWellKnownJson(desc: DescMessage): boolean {
  return desc.typeName.startsWith("google.protobuf.");
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
