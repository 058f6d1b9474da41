// GGUF v3 vocabulary shared by the reader and the writer: value types, metadata values, tensor
// types. Numbers and layouts follow ggml's gguf.h / ggml.h (GGUF_TYPE_*, GGML_TYPE_*).

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** On-disk value type ids (GGUF_TYPE_*). */
export const GGUF_VALUE_TYPE = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;

export type GgufNumberType = "u8" | "i8" | "u16" | "i16" | "u32" | "i32" | "f32" | "f64";
export type GgufBigIntType = "u64" | "i64";
export type GgufScalarType = GgufNumberType | GgufBigIntType | "bool" | "string";

/** A typed metadata value: the type is kept so a file round-trips exactly (u32 stays u32). */
export type GgufScalar =
  | { type: GgufNumberType; value: number }
  | { type: GgufBigIntType; value: bigint }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string };

export type GgufArray =
  | { type: "array"; itemType: GgufNumberType; value: readonly number[] }
  | { type: "array"; itemType: GgufBigIntType; value: readonly bigint[] }
  | { type: "array"; itemType: "bool"; value: readonly boolean[] }
  | { type: "array"; itemType: "string"; value: readonly string[] };

export type GgufValue = GgufScalar | GgufArray;

/** Insertion-ordered, so the written key order is the caller's order. */
export type GgufMetadata = Map<string, GgufValue>;

/** ggml tensor types: id, elements per block, bytes per block (0 = unknown to this module). */
export const GGML_TYPES = {
  F32: { id: 0, block: 1, bytes: 4 },
  F16: { id: 1, block: 1, bytes: 2 },
  Q4_0: { id: 2, block: 32, bytes: 18 },
  Q4_1: { id: 3, block: 32, bytes: 20 },
  Q5_0: { id: 6, block: 32, bytes: 22 },
  Q5_1: { id: 7, block: 32, bytes: 24 },
  Q8_0: { id: 8, block: 32, bytes: 34 },
  Q8_1: { id: 9, block: 32, bytes: 36 },
  Q2_K: { id: 10, block: 256, bytes: 84 },
  Q3_K: { id: 11, block: 256, bytes: 110 },
  Q4_K: { id: 12, block: 256, bytes: 144 },
  Q5_K: { id: 13, block: 256, bytes: 176 },
  Q6_K: { id: 14, block: 256, bytes: 210 },
  Q8_K: { id: 15, block: 256, bytes: 292 },
  IQ2_XXS: { id: 16, block: 256, bytes: 66 },
  IQ2_XS: { id: 17, block: 256, bytes: 74 },
  IQ3_XXS: { id: 18, block: 256, bytes: 98 },
  IQ1_S: { id: 19, block: 256, bytes: 50 },
  IQ4_NL: { id: 20, block: 32, bytes: 18 },
  IQ3_S: { id: 21, block: 256, bytes: 110 },
  IQ2_S: { id: 22, block: 256, bytes: 82 },
  IQ4_XS: { id: 23, block: 256, bytes: 136 },
  I8: { id: 24, block: 1, bytes: 1 },
  I16: { id: 25, block: 1, bytes: 2 },
  I32: { id: 26, block: 1, bytes: 4 },
  I64: { id: 27, block: 1, bytes: 8 },
  F64: { id: 28, block: 1, bytes: 8 },
  IQ1_M: { id: 29, block: 256, bytes: 56 },
  BF16: { id: 30, block: 1, bytes: 2 },
  TQ1_0: { id: 34, block: 256, bytes: 54 },
  TQ2_0: { id: 35, block: 256, bytes: 66 },
  MXFP4: { id: 39, block: 32, bytes: 17 },
  NVFP4: { id: 40, block: 0, bytes: 0 },
  Q1_0: { id: 41, block: 0, bytes: 0 },
  Q2_0: { id: 42, block: 0, bytes: 0 },
} as const;

export type GgmlTypeName = keyof typeof GGML_TYPES;

/** The tensor types this module can encode and decode. */
export type SupportedTensorType = "F32" | "F16" | "BF16" | "Q8_0" | "Q4_0" | "Q4_1" | "Q4_K" | "Q5_K" | "Q6_K";
export const SUPPORTED_TENSOR_TYPES: readonly SupportedTensorType[] = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"];

export function ggmlTypeName(id: number): string {
  for (const [name, info] of Object.entries(GGML_TYPES)) if (info.id === id) return name;
  return `unknown type ${id}`;
}

export function isSupportedTensorType(name: string): name is SupportedTensorType {
  return (SUPPORTED_TENSOR_TYPES as readonly string[]).includes(name);
}

/** Bytes of a tensor of `elements` values, or undefined when the type's block size is unknown here. */
export function tensorByteSize(typeName: string, elements: number): number | undefined {
  const info = (GGML_TYPES as Record<string, { block: number; bytes: number } | undefined>)[typeName];
  if (!info || info.block === 0) return undefined;
  if (elements % info.block !== 0) {
    throw new Error(`${elements} elements is not a whole number of ${typeName} blocks of ${info.block}`);
  }
  return (elements / info.block) * info.bytes;
}

export function alignUp(offset: number, alignment: number): number {
  return Math.ceil(offset / alignment) * alignment;
}
