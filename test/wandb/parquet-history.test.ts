// A run's history rows as a parquet file (services/wandb/parquet-history.ts), read back with
// hyparquet (hyparquet-writer's own reader): each column typed by what was logged in it, a missing
// key null, nested objects structs, mixed columns JSON text, W&B's time keys always doubles.
import { parquetMetadata, parquetReadObjects, parquetSchema } from "hyparquet"; // hyparquet-writer's one dependency
import { describe, expect, it } from "vitest";
import type { HistoryRow } from "../../services/wandb/history-json.js";
import { historyParquet } from "../../services/wandb/parquet-history.js";

type SchemaNode = ReturnType<typeof parquetSchema>;

/** A column's parquet type: `INT64`, `BYTE_ARRAY/UTF8`, `struct(a:DOUBLE,...)`. */
function typeOf(node: SchemaNode): string {
  if (node.children.length > 0) return `struct(${node.children.map((child) => `${child.element.name}:${typeOf(child)}`).join(",")})`;
  return `${node.element.type}${node.element.converted_type ? `/${node.element.converted_type}` : ""}`;
}

function read(rows: HistoryRow[]) {
  const bytes = historyParquet(rows);
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const types = Object.fromEntries(parquetSchema(parquetMetadata(file)).children.map((child) => [child.element.name, typeOf(child)]));
  return { types, rows: parquetReadObjects({ file }) };
}

describe("history as parquet", () => {
  it("types each column by its values, with nulls where a row lacks the key", async () => {
    const { types, rows } = read([
      { _step: 0, _runtime: 1, _timestamp: 1795798386, loss: 0.5, acc: 1, note: "first", done: false },
      { _step: 1, _runtime: 1.5, _timestamp: 1795798387.25, loss: 1, acc: 2, note: "second", lr: 0.1 },
    ]);
    expect(types).toEqual({ _step: "INT64", _runtime: "DOUBLE", _timestamp: "DOUBLE", loss: "DOUBLE", acc: "INT64", note: "BYTE_ARRAY/UTF8", done: "BOOLEAN", lr: "DOUBLE" });
    expect(await rows).toEqual([
      { _step: 0n, _runtime: 1, _timestamp: 1795798386, loss: 0.5, acc: 1n, note: "first", done: false, lr: null },
      { _step: 1n, _runtime: 1.5, _timestamp: 1795798387.25, loss: 1, acc: 2n, note: "second", done: null, lr: 0.1 },
    ]);
  });

  it("keeps nested objects as structs, non-finite numbers, and mixed or list columns as JSON text", async () => {
    const { types, rows } = read([
      { _step: 0, nested: { a: 1.5, b: { c: "x" } }, mixed: 1, list: [1, 2], odd: NaN, empty: {} },
      { _step: 1, nested: { a: 2 }, mixed: "one", odd: -Infinity, nothing: null },
    ]);
    expect(types).toMatchObject({ nested: "struct(a:DOUBLE,b:struct(c:BYTE_ARRAY/UTF8))", mixed: "BYTE_ARRAY/UTF8", list: "BYTE_ARRAY/UTF8", odd: "DOUBLE", empty: "BYTE_ARRAY/UTF8", nothing: "BYTE_ARRAY/UTF8" });
    const [first, second] = await rows;
    expect(first).toMatchObject({ nested: { a: 1.5, b: { c: "x" } }, mixed: "1", list: "[1,2]", odd: NaN, empty: "{}", nothing: null });
    expect(second).toMatchObject({ nested: { a: 2 }, mixed: '"one"', list: null, odd: -Infinity });
  });
});
