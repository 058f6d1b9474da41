// A run's history rows as a parquet file, the form W&B exports history in and wandb-core (0.28+)
// reads for `run.scan_history()` (its Rust reader, arrow-rs: one column per key, rows in step
// order, a missing key is null). Each column's type follows what was logged in it: integers
// INT64, other numbers DOUBLE (NaN and infinities included), booleans, UTF-8 strings, objects as
// structs of their keys (so a nested dict comes back a dict); a column mixing kinds, or holding
// lists, keeps each value as its JSON text. W&B's own `_runtime` and `_timestamp` are always
// DOUBLE (JSON writes 2.0 as 2: the kind of a whole number is not in the text).
import { parquetWriteBuffer, type ColumnSource, type SchemaElement } from "hyparquet-writer";
import type { HistoryRow } from "./history-json.js";

type Shape = { kind: "int" | "double" | "bool" | "string" | "json" } | { kind: "struct"; fields: Map<string, Shape> };

const DOUBLE_KEYS = new Set(["_runtime", "_timestamp"]);

/** The parquet file of these rows (at least one). */
export function historyParquet(rows: readonly HistoryRow[]): Uint8Array {
  const names = keysInOrder(rows);
  const schema: SchemaElement[] = [{ name: "root", num_children: names.length }];
  const columnData: ColumnSource[] = [];
  for (const name of names) {
    const values = rows.map((row) => row[name]);
    const inferred = shapeOf(values);
    const shape: Shape = DOUBLE_KEYS.has(name) && inferred.kind === "int" ? { kind: "double" } : inferred;
    schema.push(...schemaOf(name, shape));
    columnData.push({ name, data: values.map((value) => encode(value, shape)) });
  }
  const buffer = parquetWriteBuffer({ columnData, schema, statistics: false, createdBy: "open-serverless-rl W&B history" });
  return new Uint8Array(buffer);
}

function keysInOrder(objects: readonly Record<string, unknown>[]): string[] {
  const names = new Set<string>();
  for (const object of objects) for (const name of Object.keys(object)) names.add(name);
  return [...names];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The narrowest type that holds every value given (null and absent values fit any). */
function shapeOf(values: readonly unknown[]): Shape {
  const present = values.filter((value) => value !== null && value !== undefined);
  if (present.length === 0) return { kind: "json" };
  if (present.every((value) => typeof value === "boolean")) return { kind: "bool" };
  if (present.every((value) => typeof value === "number")) return { kind: present.every((value) => Number.isSafeInteger(value)) ? "int" : "double" };
  if (present.every((value) => typeof value === "string")) return { kind: "string" };
  if (present.every(isPlainObject)) {
    const objects = present as Record<string, unknown>[];
    const names = keysInOrder(objects);
    // A group needs at least one child: objects that are all empty are kept as JSON text.
    if (names.length > 0) return { kind: "struct", fields: new Map(names.map((name) => [name, shapeOf(objects.map((object) => object[name]))])) };
  }
  return { kind: "json" };
}

function schemaOf(name: string, shape: Shape): SchemaElement[] {
  const repetition_type = "OPTIONAL";
  switch (shape.kind) {
    case "int":
      return [{ name, type: "INT64", repetition_type }];
    case "double":
      return [{ name, type: "DOUBLE", repetition_type }];
    case "bool":
      return [{ name, type: "BOOLEAN", repetition_type }];
    // JSON text as plain UTF-8: arrow-rs reads it as a string either way.
    case "string":
    case "json":
      return [{ name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type }];
    case "struct":
      return [{ name, repetition_type, num_children: shape.fields.size }, ...[...shape.fields].flatMap(([field, inner]) => schemaOf(field, inner))];
  }
}

/** A value as the writer takes it for its column's type (INT64 as bigint, JSON as text). */
function encode(value: unknown, shape: Shape): unknown {
  if (value === null || value === undefined) return null;
  switch (shape.kind) {
    case "int":
      return BigInt(value as number);
    case "json":
      return JSON.stringify(value);
    case "struct": {
      const object = value as Record<string, unknown>;
      return Object.fromEntries([...shape.fields].map(([field, inner]) => [field, encode(object[field], inner)]));
    }
    default:
      return value;
  }
}
