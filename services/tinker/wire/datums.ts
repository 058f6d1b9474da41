// Tinker's protobuf Datums (forward_backward's body) as the trainer's datums: the prompt's tokens
// (int32 bytes per EncodedTextChunk), the loss inputs as flat lists (dense or sparse CSR tensors,
// float32 or int64). Everything is checked here, before anything reaches the trainer: a datum the
// trainer cannot take fails the request with a message naming the field (ids past the vocabulary
// are the trainer's to refuse: it knows the base model).
import type { Datum, Tensor } from "../../../gen/tinker/tinker_public_pb.js";
import { DType } from "../../../gen/tinker/tinker_public_pb.js";
import { badRequest } from "../../core/errors.js";
import type { LiveAdapterDatum } from "../../training/index.js";

/** Every datum of a request together (tokens and inputs): bounds the trainer's work per call. */
const MAX_REQUEST_TOKENS = 1 << 20;

export function trainerDatums(data: readonly Datum[]): LiveAdapterDatum[] {
  let total = 0;
  return data.map((datum, index) => {
    const where = `data[${index}]`;
    const tokens = modelInputTokens(datum, where);
    if (tokens.length === 0) throw badRequest(`${where}.model_input is empty`);
    total += tokens.length;
    if (total > MAX_REQUEST_TOKENS) throw badRequest(`the request holds more than ${MAX_REQUEST_TOKENS} tokens; send it in several forward_backward calls`);
    for (const id of tokens) if (id < 0) throw badRequest(`${where}.model_input holds the negative token id ${id}`);
    const inputs: Record<string, Float32Array> = {};
    let targetTokens: number[] | null = null;
    for (const [name, tensor] of Object.entries(datum.lossFnInputs)) {
      const values = denseValues(tensor, `${where}.loss_fn_inputs.${name}`);
      if (values.length !== tokens.length) throw badRequest(`${where}.loss_fn_inputs.${name} has ${values.length} values for ${tokens.length} input tokens (one per position is needed; 2-D inputs such as top-k distillation targets are not offered)`);
      if (name === "target_tokens") {
        targetTokens = Array.from(values, Number);
        for (const id of targetTokens) if (!Number.isInteger(id) || id < 0 || id > 2 ** 31 - 1) throw badRequest(`${where}.loss_fn_inputs.target_tokens holds ${id}, which is no token id`);
      } else {
        if (tensor.dtype === DType.DTYPE_INT64 || tensor.dtype === DType.DTYPE_INT32) throw badRequest(`${where}.loss_fn_inputs.${name} must be float32`);
        const list = Float32Array.from(values);
        for (const v of list) if (!Number.isFinite(v)) throw badRequest(`${where}.loss_fn_inputs.${name} holds a non-finite value`);
        inputs[name] = list;
      }
    }
    if (!targetTokens) throw badRequest(`${where}.loss_fn_inputs.target_tokens is required`);
    return { tokens, targetTokens, inputs };
  });
}

function modelInputTokens(datum: Datum, where: string): number[] {
  const tokens: number[] = [];
  datum.modelInput.forEach((chunk, i) => {
    if (chunk.chunk.case !== "encodedText") throw badRequest(`${where}.model_input[${i}] is a ${chunk.chunk.case ?? "empty"} chunk; only encoded_text (token ids) is offered: the base models here read text only`);
    const bytes = chunk.chunk.value.tokens;
    if (bytes.byteLength % 4 !== 0) throw badRequest(`${where}.model_input[${i}].tokens is not a whole number of int32 values`);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let at = 0; at < bytes.byteLength; at += 4) tokens.push(view.getInt32(at, true));
  });
  return tokens;
}

/** A tensor's values in row-major order (sparse CSR densified with 0). */
function denseValues(tensor: Tensor, where: string): Float64Array {
  const shape = tensor.shape.map(Number);
  const width = dtypeWidth(tensor.dtype, where);
  if (tensor.encoding.case === "sparseCsr") {
    const csr = tensor.encoding.value;
    if (shape.length !== 2 && shape.length !== 1) throw badRequest(`${where}: a sparse tensor needs its dense shape`);
    const rows = shape.length === 2 ? (shape[0] as number) : 1;
    const cols = shape[shape.length - 1] as number;
    const values = readValues(csr.values, tensor.dtype, width, where);
    const crow = readValues(csr.crowIndices, DType.DTYPE_INT64, 8, `${where}.crow_indices`);
    const col = readValues(csr.colIndices, DType.DTYPE_INT64, 8, `${where}.col_indices`);
    if (crow.length !== rows + 1 || col.length !== values.length || rows * cols > MAX_REQUEST_TOKENS) throw badRequest(`${where}: a malformed sparse tensor`);
    const dense = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      for (let k = crow[r] as number; k < (crow[r + 1] as number); k++) {
        const c = col[k] as number;
        if (k < 0 || k >= values.length || c < 0 || c >= cols) throw badRequest(`${where}: a malformed sparse tensor`);
        dense[r * cols + c] = values[k] as number;
      }
    }
    return dense;
  }
  const values = readValues(tensor.encoding.value ?? new Uint8Array(0), tensor.dtype, width, where);
  if (shape.length > 1) throw badRequest(`${where} has the shape [${shape.join(", ")}]; one value per position is needed`);
  if (shape.length === 1 && shape[0] !== values.length) throw badRequest(`${where} declares ${shape[0]} values and holds ${values.length}`);
  return values;
}

function dtypeWidth(dtype: DType, where: string): number {
  switch (dtype) {
    case DType.DTYPE_FLOAT32:
    case DType.DTYPE_INT32:
      return 4;
    case DType.DTYPE_INT64:
      return 8;
    default:
      throw badRequest(`${where} has the dtype ${DType[dtype] ?? dtype}; float32 or int64 is needed`);
  }
}

function readValues(bytes: Uint8Array, dtype: DType, width: number, where: string): Float64Array {
  if (bytes.byteLength % width !== 0) throw badRequest(`${where} is not a whole number of ${width}-byte values`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float64Array(bytes.byteLength / width);
  for (let i = 0; i < out.length; i++) {
    const at = i * width;
    out[i] = dtype === DType.DTYPE_FLOAT32 ? view.getFloat32(at, true) : dtype === DType.DTYPE_INT32 ? view.getInt32(at, true) : Number(view.getBigInt64(at, true));
  }
  return out;
}
