// Short constructors for typed metadata values, and typed getters for reading them back, so
// callers neither spell out `{ type, value }` objects nor cast what a reader returned.
import type { GgufBigIntType, GgufMetadata, GgufNumberType, GgufValue } from "./types.js";

export const gv = {
  u8: (value: number): GgufValue => ({ type: "u8", value }),
  i8: (value: number): GgufValue => ({ type: "i8", value }),
  u16: (value: number): GgufValue => ({ type: "u16", value }),
  i16: (value: number): GgufValue => ({ type: "i16", value }),
  u32: (value: number): GgufValue => ({ type: "u32", value }),
  i32: (value: number): GgufValue => ({ type: "i32", value }),
  u64: (value: bigint): GgufValue => ({ type: "u64", value }),
  i64: (value: bigint): GgufValue => ({ type: "i64", value }),
  f32: (value: number): GgufValue => ({ type: "f32", value }),
  f64: (value: number): GgufValue => ({ type: "f64", value }),
  bool: (value: boolean): GgufValue => ({ type: "bool", value }),
  str: (value: string): GgufValue => ({ type: "string", value }),
  numbers: (itemType: GgufNumberType, value: readonly number[]): GgufValue => ({ type: "array", itemType, value }),
  bigints: (itemType: GgufBigIntType, value: readonly bigint[]): GgufValue => ({ type: "array", itemType, value }),
  bools: (value: readonly boolean[]): GgufValue => ({ type: "array", itemType: "bool", value }),
  strings: (value: readonly string[]): GgufValue => ({ type: "array", itemType: "string", value }),
};

export function getString(metadata: GgufMetadata, key: string): string | undefined {
  const v = metadata.get(key);
  return v?.type === "string" ? v.value : undefined;
}

/** Any integer or float scalar as a JS number (u64/i64 converted; fine for counts and ids). */
export function getNumber(metadata: GgufMetadata, key: string): number | undefined {
  const v = metadata.get(key);
  if (!v || v.type === "array" || v.type === "string" || v.type === "bool") return undefined;
  return typeof v.value === "bigint" ? Number(v.value) : v.value;
}

export function getStrings(metadata: GgufMetadata, key: string): readonly string[] | undefined {
  const v = metadata.get(key);
  return v?.type === "array" && v.itemType === "string" ? v.value : undefined;
}
