// Streams a GGUF v3 file: the header first (all sizes are known from dims and types), then each
// tensor encoded and written one at a time. A tensor given as a function is produced only when
// its turn comes, so at most one tensor's values and bytes are in memory at once.
import { open, rm } from "node:fs/promises";
import { encodeHeader, type TensorInfoToWrite } from "./header-encode.js";
import { encodeTensor } from "./tensor-codec.js";
import { alignUp, GGML_TYPES, GGUF_DEFAULT_ALIGNMENT, tensorByteSize } from "./types.js";
import type { GgufMetadata, SupportedTensorType } from "./types.js";

export interface GgufTensorSource {
  /** At most 63 bytes (ggml's GGML_MAX_NAME includes the NUL). */
  name: string;
  /** ggml order: ne0, the contiguous row length, first. A [rows x cols] row-major matrix is [cols, rows]. */
  dims: readonly number[];
  type: SupportedTensorType;
  /** Values in ggml memory order (row after row of ne0 values). */
  data: Float32Array | (() => Float32Array);
}

export interface WriteGgufResult {
  bytes: number;
  dataOffset: number;
  alignment: number;
}

export async function writeGguf(path: string, metadata: GgufMetadata, tensors: readonly GgufTensorSource[]): Promise<WriteGgufResult> {
  const meta = new Map(metadata);
  const alignment = resolveAlignment(meta);
  const infos = layoutTensors(tensors, alignment);
  const header = encodeHeader(meta, infos.map((i) => i.info));
  const dataOffset = alignUp(header.length, alignment);

  const file = await open(path, "w");
  let ok = false;
  try {
    let position = 0;
    const write = async (bytes: Uint8Array) => {
      await file.write(bytes, 0, bytes.length, position);
      position += bytes.length;
    };
    await write(header);
    await write(new Uint8Array(dataOffset - header.length));
    for (const { source, info, bytes } of infos) {
      const values = typeof source.data === "function" ? source.data() : source.data;
      const expected = elementCount(source.dims);
      if (values.length !== expected) {
        throw new Error(`tensor ${source.name}: ${values.length} values given, dims [${source.dims.join(", ")}] need ${expected}`);
      }
      const encoded = encodeTensor(source.type, values);
      if (position !== dataOffset + info.offset || encoded.length !== bytes) throw new Error(`tensor ${source.name}: layout mismatch`);
      await write(encoded);
      await write(new Uint8Array(alignUp(bytes, alignment) - bytes));
    }
    ok = true;
    return { bytes: position, dataOffset, alignment };
  } finally {
    await file.close();
    if (!ok) await rm(path, { force: true });
  }
}

/** Honours a caller's general.alignment (u32, power of two); otherwise records the default 32. */
function resolveAlignment(meta: GgufMetadata): number {
  const given = meta.get("general.alignment");
  if (!given) {
    meta.set("general.alignment", { type: "u32", value: GGUF_DEFAULT_ALIGNMENT });
    return GGUF_DEFAULT_ALIGNMENT;
  }
  if (given.type !== "u32" || given.value <= 0 || (given.value & (given.value - 1)) !== 0) {
    throw new Error("general.alignment must be a u32 power of two");
  }
  return given.value;
}

function layoutTensors(tensors: readonly GgufTensorSource[], alignment: number) {
  const seen = new Set<string>();
  let offset = 0;
  return tensors.map((source) => {
    if (seen.has(source.name)) throw new Error(`duplicate tensor name ${source.name}`);
    seen.add(source.name);
    if (Buffer.byteLength(source.name) > 63) throw new Error(`tensor name ${source.name} is longer than 63 bytes`);
    if (source.dims.length < 1 || source.dims.length > 4) throw new Error(`tensor ${source.name}: 1 to 4 dims, got ${source.dims.length}`);
    if (source.dims.some((d) => !Number.isInteger(d) || d < 1)) throw new Error(`tensor ${source.name}: dims must be positive integers`);
    const block = GGML_TYPES[source.type].block;
    if (source.dims[0]! % block !== 0) throw new Error(`tensor ${source.name}: ne0 ${source.dims[0]} is not a multiple of the ${source.type} block size ${block}`);
    const bytes = tensorByteSize(source.type, elementCount(source.dims))!;
    const info: TensorInfoToWrite = { name: source.name, dims: source.dims, type: source.type, offset };
    offset = alignUp(offset + bytes, alignment);
    return { source, info, bytes };
  });
}

export function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}
