// The hyper-parameters of a llama-architecture GGUF that the forward pass needs, read the way
// llama.cpp reads them (llama-model.cpp, LLM_ARCH_LLAMA), so trainer and engine compute the same
// function.
// Problems with the model itself are TrainingInputError: retrying the job cannot fix them.
import { getNumber, getString, type GgufMetadata } from "../../../weights/gguf/index.js";
import { TrainingInputError } from "../api.js";

export interface LlamaConfig {
  architecture: string;
  layers: number;
  embedding: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ff: number;
  vocab: number;
  rmsEps: number;
  ropeBase: number;
  /** Leading dims of each head that RoPE rotates (llama.cpp: rope.dimension_count, default headDim). */
  ropeDims: number;
  /** 1 / rope.scaling.factor (linear position interpolation); 1 without scaling. */
  ropeFreqScale: number;
  /** Per-pair divisors of θ from the rope_freqs.weight tensor (Llama 3.1+ style); null when absent. */
  ropeFreqFactors: Float32Array | null;
  tiedOutput: boolean;
}

/** Architectures whose graph is the plain llama one (normal RoPE, no biases, SwiGLU). */
const SUPPORTED = new Set(["llama"]);

export function llamaConfigFromGguf(metadata: GgufMetadata, tensorNames: ReadonlySet<string>): LlamaConfig {
  const arch = getString(metadata, "general.architecture");
  if (!arch || !SUPPORTED.has(arch)) {
    throw new TrainingInputError(`the trainer supports the llama architecture only; this model is ${arch ?? "of unknown architecture"}`);
  }
  const need = (key: string): number => {
    const v = getNumber(metadata, `${arch}.${key}`);
    if (v === undefined) throw new TrainingInputError(`the model has no ${arch}.${key}`);
    return v;
  };
  const embedding = need("embedding_length");
  const heads = need("attention.head_count");
  const kvHeads = getNumber(metadata, `${arch}.attention.head_count_kv`) ?? heads;
  const headDim = getNumber(metadata, `${arch}.attention.key_length`) ?? embedding / heads;
  if (!Number.isInteger(headDim) || headDim * heads !== embedding) throw new TrainingInputError("head size must be embedding / heads");
  if (heads % kvHeads !== 0) throw new TrainingInputError(`head_count ${heads} is not a multiple of head_count_kv ${kvHeads}`);
  // llama.cpp: freq_scale = 1 / rope.scaling.factor whatever the type; YaRN & co. add more terms.
  const scaling = getString(metadata, `${arch}.rope.scaling.type`);
  if (scaling && scaling !== "none" && scaling !== "linear") throw new TrainingInputError(`RoPE scaling ${scaling} is not supported by the trainer`);
  const scaleFactor = getNumber(metadata, `${arch}.rope.scaling.factor`) ?? getNumber(metadata, `${arch}.rope.scale_linear`) ?? 0;
  const ropeDims = getNumber(metadata, `${arch}.rope.dimension_count`) ?? headDim;
  if (ropeDims % 2 !== 0 || ropeDims > headDim) throw new TrainingInputError(`bad rope.dimension_count ${ropeDims}`);
  const vocab = getNumber(metadata, `${arch}.vocab_size`) ?? tokenCount(metadata);
  return {
    architecture: arch,
    layers: need("block_count"),
    embedding,
    heads,
    kvHeads,
    headDim,
    ff: need("feed_forward_length"),
    vocab,
    rmsEps: getNumber(metadata, `${arch}.attention.layer_norm_rms_epsilon`) ?? 1e-5,
    ropeBase: getNumber(metadata, `${arch}.rope.freq_base`) ?? 10000,
    ropeDims,
    ropeFreqScale: scaleFactor === 0 ? 1 : 1 / scaleFactor,
    ropeFreqFactors: null,
    // llama.cpp falls back to token_embd when output.weight is absent.
    tiedOutput: !tensorNames.has("output.weight"),
  };
}

function tokenCount(metadata: GgufMetadata): number {
  const tokens = metadata.get("tokenizer.ggml.tokens");
  if (tokens?.type !== "array") throw new TrainingInputError("the model has neither vocab_size nor tokenizer.ggml.tokens");
  return tokens.value.length;
}
