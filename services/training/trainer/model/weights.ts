// Frozen base weights read from the GGUF. Projections are stored transposed to [n_in, n_out] so
// the forward pass computes x @ W without a transpose per step. The token embedding stays a plain
// Float32Array: LoRA never touches it, so the lookup happens on the host (no gather under jit).
import { numpy as np } from "@jax-js/jax";
import { GgufReader, SUPPORTED_TENSOR_TYPES } from "../../../weights/gguf/index.js";
import { TrainingInputError } from "../api.js";
import { llamaConfigFromGguf, type LlamaConfig } from "./config.js";
import { LORA_TARGET_TENSORS } from "../../../weights/llama-layout.js";

export type LayerWeights = {
  attnNorm: np.Array;
  q: np.Array;
  k: np.Array;
  v: np.Array;
  o: np.Array;
  ffnNorm: np.Array;
  gate: np.Array;
  up: np.Array;
  down: np.Array;
};

/** The jax side of the base model (a JsTree, passed to jitted functions as an argument). */
export type BaseArrays = {
  layers: LayerWeights[];
  outNorm: np.Array;
  /** [embedding, vocab] */
  output: np.Array;
};

export interface BaseModel {
  config: LlamaConfig;
  /** token_embd as vocab rows of `embedding` values. */
  embeddings: Float32Array;
  arrays: BaseArrays;
  /** ggml dims [n_in, n_out] of every 2-D tensor, for LoRA shape checks. */
  shapes: Map<string, readonly number[]>;
}

/** Base tensor names of a layer's projections, keyed like LayerWeights (the LoRA targets). */
export const PROJECTION_TENSORS = LORA_TARGET_TENSORS;

export type Projection = keyof typeof PROJECTION_TENSORS;
export const PROJECTIONS = Object.keys(PROJECTION_TENSORS) as Projection[];

export function projectionTensorName(layer: number, p: Projection): string {
  return `blk.${layer}.${PROJECTION_TENSORS[p]}.weight`;
}

export async function loadBaseModel(path: string): Promise<BaseModel> {
  const reader = await GgufReader.open(path);
  try {
    const names = new Set(reader.tensors.map((t) => t.name));
    const config = llamaConfigFromGguf(reader.metadata, names);
    const unsupported = [...new Set(reader.tensors.map((t) => t.type).filter((t) => !(SUPPORTED_TENSOR_TYPES as readonly string[]).includes(t)))];
    if (unsupported.length > 0) {
      throw new TrainingInputError(`the trainer reads ${SUPPORTED_TENSOR_TYPES.join(", ")} weights; this model has ${unsupported.join(", ")} tensors`);
    }
    const shapes = new Map(reader.tensors.map((t): [string, readonly number[]] => [t.name, t.dims]));
    const dimsOf = (name: string): [number, number] => {
      const d = shapes.get(name);
      if (!d || d.length !== 2) throw new TrainingInputError(`the model has no 2-D tensor ${name}`);
      return [d[0]!, d[1]!];
    };
    /** A ggml [n_in, n_out] matrix as a jax [n_in, n_out] array. */
    const matrix = async (name: string): Promise<np.Array> => {
      const [nIn, nOut] = dimsOf(name);
      return np.array(transpose(await reader.readTensor(name), nOut, nIn)).reshape([nIn, nOut]);
    };
    const vector = async (name: string): Promise<np.Array> => np.array(await reader.readTensor(name));

    if (names.has("rope_freqs.weight")) {
      const factors = await reader.readTensor("rope_freqs.weight");
      if (factors.length * 2 < config.ropeDims) throw new TrainingInputError("rope_freqs.weight is shorter than rope.dimension_count / 2");
      config.ropeFreqFactors = factors;
    }
    const embeddings = await reader.readTensor("token_embd.weight");
    if (embeddings.length !== config.vocab * config.embedding) throw new TrainingInputError("the model's token_embd does not match its vocabulary and embedding sizes");
    const layers: LayerWeights[] = [];
    for (let i = 0; i < config.layers; i++) {
      const b = `blk.${i}`;
      layers.push({
        attnNorm: await vector(`${b}.attn_norm.weight`),
        q: await matrix(projectionTensorName(i, "q")),
        k: await matrix(projectionTensorName(i, "k")),
        v: await matrix(projectionTensorName(i, "v")),
        o: await matrix(projectionTensorName(i, "o")),
        ffnNorm: await vector(`${b}.ffn_norm.weight`),
        gate: await matrix(projectionTensorName(i, "gate")),
        up: await matrix(projectionTensorName(i, "up")),
        down: await matrix(projectionTensorName(i, "down")),
      });
    }
    const output = config.tiedOutput
      ? np.array(transpose(embeddings, config.vocab, config.embedding)).reshape([config.embedding, config.vocab])
      : await matrix("output.weight");
    return { config, embeddings, arrays: { layers, outNorm: await vector("output_norm.weight"), output }, shapes };
  } finally {
    await reader.close();
  }
}

/** Row-major [rows x cols] -> row-major [cols x rows]. */
export function transpose(src: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(src.length);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = src[base + c]!;
  }
  return out;
}
