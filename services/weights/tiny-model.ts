// Writes small random-weight llama GGUF models that node-llama-cpp loads and runs, and keeps the
// built-in ones (written under DATA_DIR/models on first use). Same seed + options -> same bytes:
// weights come from a per-tensor seeded stream and nothing time- or host-dependent is written.
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { CHATML_TEMPLATE, CHATML_TOOLS_TEMPLATE } from "./chat-template.js";
import { gv } from "./gguf/values.js";
import { writeGguf, type GgufTensorSource } from "./gguf/writer.js";
import type { GgufMetadata, SupportedTensorType } from "./gguf/types.js";
import { llamaTensorPlan } from "./llama-layout.js";
import { normalTensor } from "./prng.js";
import { buildTokenizer, DEFAULT_VOCAB_SIZE, tokenizerMetadata } from "./tokenizer/build.js";

export type TinyModelType = "f32" | "f16" | "q8_0";

export interface TinyModelOptions {
  path: string;
  seed: number;
  layers: number;
  embedding: number;
  heads: number;
  /** Grouped-query attention when fewer than `heads` (must divide it). Default: heads. */
  kvHeads?: number;
  ff: number;
  contextLength: number;
  type: TinyModelType;
  /** Reuse token_embd as the output head (no output.weight). Default false. */
  tiedOutput?: boolean;
  /** Default 768 (256 bytes + 509 merges + 3 ChatML tokens). */
  vocabSize?: number;
  name?: string;
  ropeFreqBase?: number;
  rmsEpsilon?: number;
  /** `chatml` (default) or `chatml-tools` (Hermes-style tool calls). */
  chatTemplate?: "chatml" | "chatml-tools";
}

export interface TinyModelInfo {
  path: string;
  bytes: number;
  parameters: number;
  vocabSize: number;
  tensors: number;
}

const WEIGHT_TYPE: Record<TinyModelType, SupportedTensorType> = { f32: "F32", f16: "F16", q8_0: "Q8_0" };
/** general.file_type (llama_ftype): ALL_F32, MOSTLY_F16, MOSTLY_Q8_0. */
const FILE_TYPE: Record<TinyModelType, number> = { f32: 0, f16: 1, q8_0: 7 };

export async function makeTinyModel(o: TinyModelOptions): Promise<TinyModelInfo> {
  const kvHeads = o.kvHeads ?? o.heads;
  validate(o, kvHeads);
  const tokenizer = buildTokenizer({ vocabSize: o.vocabSize ?? DEFAULT_VOCAB_SIZE });
  const vocab = tokenizer.tokens.length;
  const plan = llamaTensorPlan({ layers: o.layers, embedding: o.embedding, heads: o.heads, kvHeads, ff: o.ff, vocab, tiedOutput: o.tiedOutput ?? false });

  const metadata: GgufMetadata = new Map([
    ["general.architecture", gv.str("llama")],
    ["general.name", gv.str(o.name ?? "tiny-llama")],
    ["general.file_type", gv.u32(FILE_TYPE[o.type])],
    ["general.alignment", gv.u32(32)],
    ["llama.vocab_size", gv.u32(vocab)],
    ["llama.context_length", gv.u32(o.contextLength)],
    ["llama.embedding_length", gv.u32(o.embedding)],
    ["llama.block_count", gv.u32(o.layers)],
    ["llama.feed_forward_length", gv.u32(o.ff)],
    ["llama.attention.head_count", gv.u32(o.heads)],
    ["llama.attention.head_count_kv", gv.u32(kvHeads)],
    ["llama.rope.dimension_count", gv.u32(o.embedding / o.heads)],
    ["llama.rope.freq_base", gv.f32(o.ropeFreqBase ?? 10000)],
    ["llama.attention.layer_norm_rms_epsilon", gv.f32(o.rmsEpsilon ?? 1e-5)],
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
  return { path: o.path, bytes, parameters, vocabSize: vocab, tensors: plan.length };
}

function validate(o: TinyModelOptions, kvHeads: number): void {
  if (!Object.hasOwn(WEIGHT_TYPE, o.type)) throw new Error("type must be f32, f16 or q8_0");
  if (!Number.isInteger(o.seed) || o.seed < 0 || o.seed > 0xffffffff) throw new Error("seed must be an integer from 0 to 2^32-1");
  const sizes = { layers: o.layers, embedding: o.embedding, heads: o.heads, kvHeads, ff: o.ff, contextLength: o.contextLength };
  for (const [k, v] of Object.entries(sizes)) if (!Number.isInteger(v) || v < 1) throw new Error(`${k} must be a positive integer`);
  if (o.embedding % o.heads !== 0) throw new Error(`embedding ${o.embedding} is not divisible by heads ${o.heads}`);
  if ((o.embedding / o.heads) % 2 !== 0) throw new Error("the head size (embedding / heads) must be even for RoPE");
  if (o.heads % kvHeads !== 0) throw new Error(`heads ${o.heads} is not divisible by kvHeads ${kvHeads}`);
  if (o.type === "q8_0" && (o.embedding % 32 !== 0 || o.ff % 32 !== 0)) throw new Error("q8_0 needs embedding and ff to be multiples of 32");
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
