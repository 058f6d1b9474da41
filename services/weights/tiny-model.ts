// Writes small random-weight GGUF models (llama by default, or another architecture from
// architectures/) that node-llama-cpp loads and runs, and keeps the built-in ones (written under
// DATA_DIR/models on first use). Same seed + options -> same bytes: weights come from a
// per-tensor seeded stream and nothing time- or host-dependent is written.
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { ARCHITECTURES, TINY_ARCHITECTURES, type ArchitectureSpec, type ArchShape, type TinyArchitecture } from "./architectures/index.js";
import { CHATML_TEMPLATE, CHATML_TOOLS_TEMPLATE } from "./chat-template.js";
import { gv } from "./gguf/values.js";
import { writeGguf, type GgufTensorSource } from "./gguf/writer.js";
import { GGML_TYPES, type GgufMetadata, type SupportedTensorType } from "./gguf/types.js";
import { normalTensor } from "../core/prng.js";
import { buildTokenizer, DEFAULT_VOCAB_SIZE, tokenizerMetadata } from "./tokenizer/build.js";

export { TINY_ARCHITECTURES, type TinyArchitecture };

export type TinyModelType = "f32" | "f16" | "q8_0" | "q4_0" | "q4_1" | "q4_k" | "q5_k" | "q6_k";

export interface TinyModelOptions {
  path: string;
  /** Default llama. Every architecture gets the same ChatML tokenizer and template. */
  architecture?: TinyArchitecture;
  seed: number;
  layers: number;
  embedding: number;
  heads: number;
  /** Grouped-query attention when fewer than `heads` (must divide it). Default: heads. */
  kvHeads?: number;
  /**
   * Size of one attention head. Fixed at embedding / heads except for qwen3 (default 128) and
   * gemma2/gemma3 (default 256): those defaults are what transformers assumes (see
   * architectures/qwen.ts, gemma.ts); other values run in llama.cpp only.
   */
  headDim?: number;
  ff: number;
  contextLength: number;
  type: TinyModelType;
  /** Reuse token_embd as the output head (no output.weight). Default false; gemma: true (gemma2: always). */
  tiedOutput?: boolean;
  /** gemma2/gemma3 only: attention.sliding_window. Default 4096. */
  slidingWindow?: number;
  /** Default 768 (256 bytes + 509 merges + 3 ChatML tokens). */
  vocabSize?: number;
  /** general.name; default tiny-<architecture> (phi3: tiny-phi). Some names are refused: see checkName. */
  name?: string;
  ropeFreqBase?: number;
  rmsEpsilon?: number;
  /** `chatml` (default) or `chatml-tools` (Hermes-style tool calls). */
  chatTemplate?: "chatml" | "chatml-tools";
}

export interface TinyModelInfo {
  path: string;
  architecture: TinyArchitecture;
  bytes: number;
  parameters: number;
  vocabSize: number;
  tensors: number;
}

const WEIGHT_TYPE: Record<TinyModelType, SupportedTensorType> = {
  f32: "F32",
  f16: "F16",
  q8_0: "Q8_0",
  q4_0: "Q4_0",
  q4_1: "Q4_1",
  q4_k: "Q4_K",
  q5_k: "Q5_K",
  q6_k: "Q6_K",
};
export const TINY_MODEL_TYPES = Object.keys(WEIGHT_TYPE) as TinyModelType[];
/**
 * general.file_type (llama_ftype): ALL_F32, MOSTLY_F16, MOSTLY_Q8_0, MOSTLY_Q4_0, MOSTLY_Q4_1, and
 * for the K-quants the _S variants (Q4_K_S, Q5_K_S), whose weights are all of the one type (the
 * _M mixes keep some tensors at a higher one), and Q6_K.
 */
const FILE_TYPE: Record<TinyModelType, number> = { f32: 0, f16: 1, q8_0: 7, q4_0: 2, q4_1: 3, q4_k: 14, q5_k: 16, q6_k: 18 };

export async function makeTinyModel(o: TinyModelOptions): Promise<TinyModelInfo> {
  const architecture = o.architecture ?? "llama";
  const spec = ARCHITECTURES[architecture];
  if (!spec) throw new Error(`unknown architecture ${String(architecture)} (known: ${TINY_ARCHITECTURES.join(", ")})`);
  const tokenizer = buildTokenizer({ vocabSize: o.vocabSize ?? DEFAULT_VOCAB_SIZE });
  const shape = resolveShape(o, spec, tokenizer.tokens.length);
  validate(o, architecture, spec, shape);
  const plan = spec.tensors(shape);
  const p = spec.gguf;
  const modelName = o.name ?? spec.defaultName ?? `tiny-${architecture}`;

  const metadata: GgufMetadata = new Map([
    ["general.architecture", gv.str(p)],
    ["general.name", gv.str(modelName)],
    ["general.file_type", gv.u32(FILE_TYPE[o.type])],
    ["general.alignment", gv.u32(32)],
    [`${p}.vocab_size`, gv.u32(shape.vocab)],
    [`${p}.context_length`, gv.u32(o.contextLength)],
    [`${p}.embedding_length`, gv.u32(o.embedding)],
    [`${p}.block_count`, gv.u32(o.layers)],
    [`${p}.feed_forward_length`, gv.u32(o.ff)],
    [`${p}.attention.head_count`, gv.u32(o.heads)],
    [`${p}.attention.head_count_kv`, gv.u32(shape.kvHeads)],
    [`${p}.rope.dimension_count`, gv.u32(shape.headDim)],
    [`${p}.rope.freq_base`, gv.f32(o.ropeFreqBase ?? 10000)],
    [`${p}.attention.layer_norm_rms_epsilon`, gv.f32(o.rmsEpsilon ?? 1e-5)],
    ...spec.metadata(shape),
    ...tokenizerMetadata(tokenizer),
    ["tokenizer.chat_template", gv.str(o.chatTemplate === "chatml-tools" ? CHATML_TOOLS_TEMPLATE : CHATML_TEMPLATE)],
  ]);

  const tensors: GgufTensorSource[] = plan.map(({ name, dims, std }) => {
    const count = dims.reduce((a, b) => a * b, 1);
    return {
      name,
      dims,
      // 1-D norm weights stay F32, as llama.cpp's own quantiser leaves them.
      type: dims.length === 1 ? "F32" : WEIGHT_TYPE[o.type],
      data: () => (std === undefined ? new Float32Array(count).fill(1) : normalTensor(o.seed, name, count, std)),
    };
  });
  const { bytes } = await writeGguf(o.path, metadata, tensors);
  const parameters = plan.reduce((sum, t) => sum + t.dims.reduce((a, b) => a * b, 1), 0);
  return { path: o.path, architecture, bytes, parameters, vocabSize: shape.vocab, tensors: plan.length };
}

/** The options with the architecture's defaults filled in. */
function resolveShape(o: TinyModelOptions, spec: ArchitectureSpec, vocab: number): ArchShape {
  return {
    layers: o.layers,
    embedding: o.embedding,
    heads: o.heads,
    kvHeads: o.kvHeads ?? o.heads,
    headDim: o.headDim ?? spec.defaultHeadDim ?? o.embedding / o.heads,
    ff: o.ff,
    vocab,
    tiedOutput: o.tiedOutput ?? spec.outputHead !== "untied",
    slidingWindow: o.slidingWindow ?? 4096,
  };
}

/** general.name values one of the two readers treats specially, to this tokenizer's harm. */
function checkName(name: string, spec: ArchitectureSpec): void {
  // llama.cpp (llama-vocab.cpp) gives any model whose name contains phi3 / phi-3 Phi-3's token
  // attributes: it looks up </s>, <unk> and <s> (absent here, so the load fails) and would strip
  // whitespace after every special token, breaking ChatML's "<|im_start|>user\n".
  if (/phi-?3/i.test(name)) throw new Error(`name ${name}: llama.cpp gives names containing phi3 or phi-3 Phi-3's vocabulary rules`);
  // transformers loads a llama file named exactly "mistral" as MistralForCausalLM and then fails
  // (see architectures/llama.ts).
  if (spec.gguf === "llama" && name === "mistral") throw new Error('name "mistral" makes transformers fail to load a llama-architecture file');
}

function validate(o: TinyModelOptions, arch: TinyArchitecture, spec: ArchitectureSpec, s: ArchShape): void {
  if (!Object.hasOwn(WEIGHT_TYPE, o.type)) throw new Error(`type must be one of ${TINY_MODEL_TYPES.join(", ")}`);
  if (!Number.isInteger(o.seed) || o.seed < 0 || o.seed > 0xffffffff) throw new Error("seed must be an integer from 0 to 2^32-1");
  const sizes = { layers: o.layers, embedding: o.embedding, heads: o.heads, kvHeads: s.kvHeads, ff: o.ff, contextLength: o.contextLength, slidingWindow: s.slidingWindow };
  for (const [k, v] of Object.entries(sizes)) if (!Number.isInteger(v) || v < 1) throw new Error(`${k} must be a positive integer`);
  if (spec.defaultHeadDim === undefined) {
    if (o.embedding % o.heads !== 0) throw new Error(`embedding ${o.embedding} is not divisible by heads ${o.heads}`);
    if (o.headDim !== undefined && o.headDim !== o.embedding / o.heads) throw new Error(`${arch} has no head size of its own: headDim must be embedding / heads`);
  }
  if (!Number.isInteger(s.headDim) || s.headDim < 1) throw new Error("headDim must be a positive integer");
  if (s.headDim % 2 !== 0) throw new Error(`the head size ${s.headDim} must be even for RoPE`);
  if (o.heads % s.kvHeads !== 0) throw new Error(`heads ${o.heads} is not divisible by kvHeads ${s.kvHeads}`);
  // Every 2-D weight's rows (ne0) are embedding, ff or heads x head size long, and a row is whole blocks.
  const block = GGML_TYPES[WEIGHT_TYPE[o.type]].block;
  if (o.embedding % block !== 0 || o.ff % block !== 0 || (o.heads * s.headDim) % block !== 0) {
    throw new Error(`${o.type} needs embedding, ff and heads x head size to be multiples of ${block} (its block size)`);
  }
  if (o.name !== undefined) checkName(o.name, spec);
  if (o.slidingWindow !== undefined && !spec.slidingWindow) throw new Error(`${arch} files have no sliding window`);
  if (!s.tiedOutput && spec.outputHead === "tied-only") throw new Error(`${arch} always uses token_embd as the output head: tiedOutput cannot be false`);
}

/** The built-in models, by the name requests use. */
export const BUILT_IN_MODELS = ["tiny-chat", "tiny-tools"] as const;
export type BuiltInModelName = (typeof BUILT_IN_MODELS)[number];

const TINY_CHAT: Omit<TinyModelOptions, "path"> = {
  name: "tiny-chat",
  seed: 1,
  layers: 4,
  embedding: 128,
  heads: 4,
  kvHeads: 2,
  ff: 384,
  contextLength: 2048,
  type: "f32",
};

export const BUILT_IN_PRESETS: Record<BuiltInModelName, Omit<TinyModelOptions, "path">> = {
  "tiny-chat": TINY_CHAT,
  // The same weights with a template that offers tools and renders tool calls.
  "tiny-tools": { ...TINY_CHAT, name: "tiny-tools", chatTemplate: "chatml-tools" },
};

const pending = new Map<string, Promise<string>>();

/**
 * The path of DATA_DIR/models/<name>.gguf, written on first use. Written to a temporary name and
 * renamed, so a reader never sees a partial file and concurrent first uses are harmless.
 */
export function ensureBuiltInModel(name: BuiltInModelName, dataDir: string): Promise<string> {
  const preset = BUILT_IN_PRESETS[name];
  if (!preset) return Promise.reject(new Error(`unknown built-in model ${String(name)} (known: ${BUILT_IN_MODELS.join(", ")})`));
  const path = join(dataDir, "models", `${name}.gguf`);
  const inFlight = pending.get(path);
  if (inFlight) return inFlight;
  const work = (async () => {
    if (await exists(path)) return path;
    await mkdir(join(dataDir, "models"), { recursive: true });
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    try {
      await makeTinyModel({ ...preset, path: tmp });
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    return path;
  })().finally(() => pending.delete(path));
  pending.set(path, work);
  return work;
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
