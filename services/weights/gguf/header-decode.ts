// Parses a GGUF header (v2 or v3) from a cursor: metadata values keep their on-disk types, and
// every size read from the file is checked against the file's length before anything is allocated.
import type { FileCursor } from "./file-cursor.js";
import { alignUp, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_VALUE_TYPE, ggmlTypeName, tensorByteSize } from "./types.js";
import type { GgufMetadata, GgufScalar, GgufScalarType, GgufValue } from "./types.js";

export interface GgufTensorInfo {
  name: string;
  /** ggml order: ne0 first. */
  dims: number[];
  typeId: number;
  /** ggml type name, e.g. "F16", "Q4_K". */
  type: string;
  elements: number;
  /** Absolute offset of the tensor's data in the file. */
  fileOffset: number;
  /** undefined for types whose block size this module does not know. */
  byteSize: number | undefined;
}

export interface GgufHeader {
  version: number;
  metadata: GgufMetadata;
  tensors: GgufTensorInfo[];
  alignment: number;
  dataOffset: number;
}

const TYPE_BY_ID = new Map<number, keyof typeof GGUF_VALUE_TYPE>(
  Object.entries(GGUF_VALUE_TYPE).map(([name, id]) => [id, name as keyof typeof GGUF_VALUE_TYPE]),
);

export async function decodeHeader(c: FileCursor): Promise<GgufHeader> {
  await c.need(24);
  const magic = c.u32();
  if (magic !== GGUF_MAGIC) throw new Error("not a GGUF file (bad magic)");
  const version = c.u32();
  if (version !== 2 && version !== 3) throw new Error(`GGUF version ${version} is not supported (2 or 3 expected)`);
  const tensorCount = safe(c.u64(), "tensor count", c.fileSize);
  const kvCount = safe(c.u64(), "metadata count", c.fileSize);

  const metadata: GgufMetadata = new Map();
  for (let i = 0; i < kvCount; i++) {
    const key = await readString(c);
    await c.need(4);
    metadata.set(key, await readValue(c, key, c.u32()));
  }

  const alignmentValue = metadata.get("general.alignment");
  const alignment = alignmentValue?.type === "u32" ? alignmentValue.value : GGUF_DEFAULT_ALIGNMENT;
  if (alignment <= 0 || (alignment & (alignment - 1)) !== 0) throw new Error(`bad general.alignment ${alignment}`);

  const raw: { name: string; dims: number[]; typeId: number; offset: number }[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = await readString(c);
    await c.need(4);
    const nDims = c.u32();
    if (nDims < 1 || nDims > 4) throw new Error(`tensor ${name}: ${nDims} dims`);
    await c.need(8 * nDims + 12);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(safe(c.u64(), `tensor ${name} dim`, Number.MAX_SAFE_INTEGER));
    const typeId = c.u32();
    raw.push({ name, dims, typeId, offset: safe(c.u64(), `tensor ${name} offset`, c.fileSize) });
  }

  const dataOffset = alignUp(c.position, alignment);
  const tensors = raw.map((t): GgufTensorInfo => {
    const elements = t.dims.reduce((a, b) => a * b, 1);
    const type = ggmlTypeName(t.typeId);
    const byteSize = tensorByteSize(type, elements);
    const fileOffset = dataOffset + t.offset;
    if (byteSize !== undefined && fileOffset + byteSize > c.fileSize) {
      throw new Error(`tensor ${t.name} data (${byteSize} bytes at ${fileOffset}) runs past the end of the file`);
    }
    return { name: t.name, dims: t.dims, typeId: t.typeId, type, elements, fileOffset, byteSize };
  });
  return { version, metadata, tensors, alignment, dataOffset };
}

async function readString(c: FileCursor): Promise<string> {
  await c.need(8);
  const n = safe(c.u64(), "string length", c.fileSize);
  await c.need(n);
  return c.utf8(n);
}

async function readValue(c: FileCursor, key: string, typeId: number): Promise<GgufValue> {
  const type = TYPE_BY_ID.get(typeId);
  if (!type) throw new Error(`metadata ${key}: unknown value type ${typeId}`);
  if (type !== "array") return readScalar(c, key, type);
  await c.need(12);
  const itemType = TYPE_BY_ID.get(c.u32());
  const n = safe(c.u64(), `metadata ${key} array length`, c.fileSize);
  if (!itemType || itemType === "array") throw new Error(`metadata ${key}: arrays of ${itemType ?? "unknown type"} are not supported`);
  const items: (number | bigint | boolean | string)[] = [];
  for (let i = 0; i < n; i++) items.push((await readScalar(c, key, itemType)).value);
  // The items were read with itemType's reader, so the union member matches by construction.
  return { type: "array", itemType, value: items } as GgufValue;
}

async function readScalar(c: FileCursor, key: string, type: GgufScalarType): Promise<GgufScalar> {
  if (type === "string") return { type, value: await readString(c) };
  const size = { u8: 1, i8: 1, bool: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, u64: 8, i64: 8, f64: 8 }[type];
  const p = c.need(size);
  if (p) await p;
  switch (type) {
    case "bool": {
      const b = c.u8();
      if (b > 1) throw new Error(`metadata ${key}: bool byte ${b}`);
      return { type, value: b === 1 };
    }
    case "u64":
    case "i64":
      return { type, value: c[type]() };
    default:
      return { type, value: c[type]() };
  }
}

function safe(v: bigint, what: string, max: number): number {
  if (v > BigInt(max)) throw new Error(`${what} ${v} is out of range (file too short or corrupt)`);
  return Number(v);
}
