// The trainer's per-datum outputs as Tinker's ForwardBackwardOutput: one ArrayRecord whose fields
// are BatchedTensors (every datum's float32 values end to end, with byte offsets), which is how
// the SDK decodes it (tinker/proto/response_conv.py).
import { create, toBinary } from "@bufbuild/protobuf";
import { ArrayRecordSchema, BatchedTensorSchema, DType, ForwardBackwardOutputSchema } from "../../../gen/tinker/tinker_public_pb.js";
import { bytesOf } from "./bytes.js";

export function forwardBackwardOutput(outputs: readonly Record<string, Float32Array>[], metrics: Record<string, number>): Uint8Array {
  const names = [...new Set(outputs.flatMap((o) => Object.keys(o)))].sort();
  const fields = Object.fromEntries(
    names.map((name) => {
      const lists = outputs.map((o) => o[name] ?? new Float32Array(0));
      const data = new Float32Array(lists.reduce((n, l) => n + l.length, 0));
      const offsets = new BigInt64Array(lists.length + 1);
      let at = 0;
      lists.forEach((list, i) => {
        data.set(list, at);
        at += list.length;
        offsets[i + 1] = BigInt(at * 4);
      });
      return [name, create(BatchedTensorSchema, { data: bytesOf(data), offsets: bytesOf(offsets), dtype: DType.DTYPE_FLOAT32 })];
    }),
  );
  const record = create(ArrayRecordSchema, { typeTag: "ArrayRecord", fields, numDatums: BigInt(outputs.length) });
  return toBinary(ForwardBackwardOutputSchema, create(ForwardBackwardOutputSchema, { lossFnOutputType: "ArrayRecord", lossFnOutputs: [record], metrics }));
}

/** Typed arrays are in the machine's byte order; the wire is little-endian (as every x86/ARM host is). */