// Serialises the GGUF header: magic, version, counts, metadata key/values and tensor infos.
import { GGML_TYPES, GGUF_MAGIC, GGUF_VALUE_TYPE, GGUF_VERSION } from "./types.js";
import type { GgufMetadata, GgufScalarType, GgufValue, SupportedTensorType } from "./types.js";

export interface TensorInfoToWrite {
  name: string;
  dims: readonly number[];
  type: SupportedTensorType;
  /** Offset from the start of the data section, already aligned. */
  offset: number;
}

/** Collects small little-endian writes into chunks joined once at the end. */
class ByteSink {
  private readonly chunks: Buffer[] = [];
  length = 0;

  private push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u8(v: number) { const b = Buffer.alloc(1); b.writeUInt8(v); this.push(b); }
  i8(v: number) { const b = Buffer.alloc(1); b.writeInt8(v); this.push(b); }
  u16(v: number) { const b = Buffer.alloc(2); b.writeUInt16LE(v); this.push(b); }
  i16(v: number) { const b = Buffer.alloc(2); b.writeInt16LE(v); this.push(b); }
  u32(v: number) { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  i32(v: number) { const b = Buffer.alloc(4); b.writeInt32LE(v); this.push(b); }
  u64(v: bigint) { const b = Buffer.alloc(8); b.writeBigUInt64LE(v); this.push(b); }
  i64(v: bigint) { const b = Buffer.alloc(8); b.writeBigInt64LE(v); this.push(b); }
  f32(v: number) { const b = Buffer.alloc(4); b.writeFloatLE(v); this.push(b); }
  f64(v: number) { const b = Buffer.alloc(8); b.writeDoubleLE(v); this.push(b); }
  str(v: string) { const bytes = Buffer.from(v, "utf8"); this.u64(BigInt(bytes.length)); this.push(bytes); }
  toBuffer(): Buffer { return Buffer.concat(this.chunks, this.length); }
}

export function encodeHeader(metadata: GgufMetadata, tensors: readonly TensorInfoToWrite[]): Buffer {
  const sink = new ByteSink();
  sink.u32(GGUF_MAGIC);
  sink.u32(GGUF_VERSION);
  sink.u64(BigInt(tensors.length));
  sink.u64(BigInt(metadata.size));
  for (const [key, value] of metadata) {
    sink.str(key);
    writeValue(sink, key, value);
  }
  for (const t of tensors) {
    sink.str(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(BigInt(d));
    sink.u32(GGML_TYPES[t.type].id);
    sink.u64(BigInt(t.offset));
  }
  return sink.toBuffer();
}

function writeValue(sink: ByteSink, key: string, v: GgufValue): void {
  sink.u32(GGUF_VALUE_TYPE[v.type]);
  if (v.type !== "array") {
    writeScalar(sink, key, v.type, v.value);
    return;
  }
  sink.u32(GGUF_VALUE_TYPE[v.itemType]);
  sink.u64(BigInt(v.value.length));
  for (const item of v.value) writeScalar(sink, key, v.itemType, item);
}

function writeScalar(sink: ByteSink, key: string, type: GgufScalarType, value: number | bigint | boolean | string): void {
  const bad = () => new Error(`metadata ${key}: ${String(value)} is not a valid ${type}`);
  switch (type) {
    case "string":
      if (typeof value !== "string") throw bad();
      return sink.str(value);
    case "bool":
      if (typeof value !== "boolean") throw bad();
      return sink.u8(value ? 1 : 0);
    case "u64":
    case "i64":
      if (typeof value !== "bigint") throw bad();
      return type === "u64" ? sink.u64(value) : sink.i64(value);
    default:
      if (typeof value !== "number") throw bad();
      try {
        sink[type](value);
      } catch {
        throw bad(); // Buffer's range errors, reworded to name the key
      }
  }
}
