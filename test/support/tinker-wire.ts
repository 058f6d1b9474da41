// Tinker's wire for tests that speak it without the SDK: forward_backward bodies in protobuf
// (optionally a zstd frame), decoded ForwardBackwardOutput and SampleResponse, per-datum arrays.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  ChunkSchema,
  DatumSchema,
  DType,
  ForwardBackwardOutputSchema,
  ForwardBackwardRequestSchema,
  SampleResponseSchema,
  TensorSchema,
  type ForwardBackwardOutput,
} from "../../gen/tinker/tinker_public_pb.js";

export interface PlainDatum {
  tokens: number[];
  targets: number[];
  floats?: Record<string, number[]>;
}

export function forwardBackwardBody(modelId: string, seqId: number, data: PlainDatum[], lossFn: string, options: { forwardOnly?: boolean; config?: Record<string, number> } = {}): Uint8Array {
  return toBinary(
    ForwardBackwardRequestSchema,
    create(ForwardBackwardRequestSchema, {
      modelId,
      seqId,
      lossFn,
      forwardOnly: options.forwardOnly ?? false,
      lossFnConfig: options.config ?? {},
      data: data.map((d) =>
        create(DatumSchema, {
          modelInput: [create(ChunkSchema, { chunk: { case: "encodedText", value: { $typeName: "tinker_public.EncodedTextChunk", tokens: bytes(Int32Array.from(d.tokens)) } } })],
          lossFnInputs: {
            target_tokens: create(TensorSchema, { encoding: { case: "dense", value: bytes(BigInt64Array.from(d.targets.map(BigInt))) }, dtype: DType.DTYPE_INT64, shape: [BigInt(d.targets.length)] }),
            ...Object.fromEntries(Object.entries(d.floats ?? {}).map(([name, values]) => [name, create(TensorSchema, { encoding: { case: "dense", value: bytes(Float32Array.from(values)) }, dtype: DType.DTYPE_FLOAT32, shape: [BigInt(values.length)] })])),
          },
        }),
      ),
    }),
  );
}

/** A valid zstd frame of raw (stored) blocks: what a zstd encoder writes for incompressible data. */
export function zstdStored(data: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd]), Uint8Array.from([0x00])];
  // Frame header descriptor 0: no checksum, no content size, window descriptor follows.
  parts.push(Uint8Array.from([0x58])); // window 2^(10 + 11) = 2 MiB
  const max = 128 * 1024;
  for (let at = 0; at < Math.max(data.length, 1); at += max) {
    const block = data.subarray(at, at + max);
    const last = at + max >= data.length ? 1 : 0;
    const header = (block.length << 3) | (0 << 1) | last;
    parts.push(Uint8Array.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff]), block);
  }
  return concat(parts);
}

/** A zstd frame of `blocks` RLE blocks of 128 KiB each: tiny on the wire, huge once inflated. */
export function zstdBomb(blocks: number): Uint8Array {
  const parts: Uint8Array[] = [Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58])];
  for (let i = 0; i < blocks; i++) {
    const header = ((128 * 1024) << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0);
    parts.push(Uint8Array.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff, 0x41]));
  }
  return concat(parts);
}

export function decodeForwardBackward(body: Uint8Array): { output: ForwardBackwardOutput; perDatum: Record<string, number[]>[] } {
  const output = fromBinary(ForwardBackwardOutputSchema, body);
  const perDatum: Record<string, number[]>[] = [];
  for (const record of output.lossFnOutputs) {
    const start = perDatum.length;
    for (let i = 0; i < Number(record.numDatums); i++) perDatum.push({});
    for (const [name, tensor] of Object.entries(record.fields)) {
      const offsets = new BigInt64Array(tensor.offsets.slice().buffer);
      const values = new Float32Array(tensor.data.slice().buffer);
      for (let i = 0; i + 1 < offsets.length; i++) (perDatum[start + i] as Record<string, number[]>)[name] = Array.from(values.subarray(Number(offsets[i]) / 4, Number(offsets[i + 1]) / 4));
    }
  }
  return { output, perDatum };
}

export function decodeSample(body: Uint8Array): { sequences: { tokens: number[]; logprobs: number[]; stopReason: number }[]; promptLogprobs: number[] | null } {
  const response = fromBinary(SampleResponseSchema, body);
  return {
    sequences: response.sequences.map((s) => ({ tokens: Array.from(new Int32Array(s.tokens.slice().buffer)), logprobs: Array.from(new Float32Array((s.logprobs ?? new Uint8Array()).slice().buffer)), stopReason: s.stopReason })),
    promptLogprobs: response.promptLogprobs ? Array.from(new Float32Array(response.promptLogprobs.slice().buffer)) : null,
  };
}

function bytes(array: Int32Array | Float32Array | BigInt64Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
