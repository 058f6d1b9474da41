// Writes LoRA adapters as llama.cpp loads them (src/llama-adapter.cpp, src/llama-graph.cpp).
//
// For a base weight W with ggml dims [n_in, n_out] (n_out rows of n_in values), llama.cpp computes
//   y = W·x + scale · B·(A·x),   scale = adapterScale · alpha / rank
// (adapterScale is the per-context `scale` given when the adapter is attached; rank is read from
// B's ne0; alpha = 0 would mean "scale = adapterScale", so 0 is refused here). In the file:
//   <W>.lora_a: ggml dims [n_in, rank]  = A as rank rows of n_in values  (row-major [rank x n_in])
//   <W>.lora_b: ggml dims [rank, n_out] = B as n_out rows of rank values (row-major [n_out x rank])
// so the Float32Arrays callers pass (A: [rank x n_in], B: [n_out x rank], row-major, the PEFT
// layout of lora_A.weight / lora_B.weight) are written as they are, no transposes.
// token_embd is refused: llama.cpp expects its A and B swapped (see llm_build_inp_embd).
// The header needs general.type = "adapter", adapter.type = "lora", adapter.lora.alpha, and
// general.architecture equal to the base model's.
//
// llama.cpp (and node-llama-cpp's model) cache adapters by file path: write every new adapter
// to a new path, never over one that a loaded model may have seen.
import { GgufReader } from "./gguf/reader.js";
import { getNumber, getString, gv } from "./gguf/values.js";
import { writeGguf, type GgufTensorSource } from "./gguf/writer.js";
import type { GgufMetadata } from "./gguf/types.js";
import { LORA_TARGET_TENSORS, type LoraTarget } from "./architectures/llama-layout.js";
import { normalTensor } from "../core/prng.js";

export interface LoraPair {
  /** A: [rank x n_in], row-major. */
  a: Float32Array;
  /** B: [n_out x rank], row-major. */
  b: Float32Array;
}

export interface BaseModelDescription {
  architecture: string;
  /** ggml dims [n_in, n_out] of the base weights, to check shapes; omitted: inferred from A and B. */
  shapes?: ReadonlyMap<string, readonly number[]>;
}

export interface WriteLoraOptions {
  path: string;
  /** The base GGUF (architecture and shapes are read from it) ... */
  baseModelPath?: string;
  /** ... or its description. */
  base?: BaseModelDescription;
  alpha: number;
  rank: number;
  /** Keyed by the base tensor name, e.g. "blk.0.attn_q.weight". */
  tensors: ReadonlyMap<string, LoraPair>;
  /** Tensor storage type; default "f32". */
  type?: "f32" | "f16";
  name?: string;
}

export async function writeLoraAdapter(o: WriteLoraOptions): Promise<{ path: string; bytes: number }> {
  const base = o.base ?? (o.baseModelPath ? await describeBase(o.baseModelPath) : undefined);
  if (!base) throw new Error("writeLoraAdapter needs baseModelPath or base");
  if (!Number.isInteger(o.rank) || o.rank < 1) throw new Error("rank must be a positive integer");
  if (!(o.alpha > 0)) throw new Error("alpha must be > 0 (llama.cpp reads alpha 0 as 'no scaling')");
  if (o.tensors.size === 0) throw new Error("a LoRA adapter needs at least one tensor");
  const type = o.type === "f16" ? "F16" : "F32";

  const tensors: GgufTensorSource[] = [];
  for (const [name, { a, b }] of o.tensors) {
    if (name.startsWith("token_embd.")) throw new Error(`${name}: LoRA on the token embedding is not supported by this writer`);
    if (a.length % o.rank !== 0 || b.length % o.rank !== 0) throw new Error(`${name}: A and B lengths must be multiples of rank ${o.rank}`);
    const nIn = a.length / o.rank;
    const nOut = b.length / o.rank;
    const shape = base.shapes?.get(name);
    if (base.shapes && !shape) throw new Error(`the base model has no tensor ${name}`);
    if (shape && (shape.length !== 2 || shape[0] !== nIn || shape[1] !== nOut)) {
      throw new Error(`${name}: base dims are [${shape.join(", ")}], but A is [${o.rank} x ${nIn}] and B is [${nOut} x ${o.rank}]`);
    }
    tensors.push({ name: `${name}.lora_a`, dims: [nIn, o.rank], type, data: a });
    tensors.push({ name: `${name}.lora_b`, dims: [o.rank, nOut], type, data: b });
  }

  const metadata: GgufMetadata = new Map([
    ["general.architecture", gv.str(base.architecture)],
    ["general.type", gv.str("adapter")],
    ["general.name", gv.str(o.name ?? "lora")],
    ["general.alignment", gv.u32(32)],
    ["adapter.type", gv.str("lora")],
    ["adapter.lora.alpha", gv.f32(o.alpha)],
  ]);
  const { bytes } = await writeGguf(o.path, metadata, tensors);
  return { path: o.path, bytes };
}

async function describeBase(path: string): Promise<{ architecture: string; blockCount: number; shapes: Map<string, readonly number[]> }> {
  const reader = await GgufReader.open(path);
  await reader.close();
  const architecture = getString(reader.metadata, "general.architecture");
  if (!architecture) throw new Error(`${path} has no general.architecture`);
  return {
    architecture,
    blockCount: getNumber(reader.metadata, `${architecture}.block_count`) ?? 0,
    shapes: new Map(reader.tensors.map((t): [string, readonly number[]] => [t.name, t.dims])),
  };
}

export interface RandomLoraOptions {
  basePath: string;
  /** Where to write; use a fresh path per adapter (llama.cpp caches by path). */
  path: string;
  seed: number;
  rank: number;
  alpha: number;
  targets: readonly LoraTarget[];
  /** Layers to adapt; default all. */
  layers?: readonly number[];
  /** B = 0, as a freshly initialised LoRA: the adapter then changes nothing. */
  zeroB?: boolean;
}

/** A random adapter for tests: A ~ N(0, 1/n_in), B ~ N(0, 1/rank), so B·A·x is O(|x|). */
export async function makeRandomLora(o: RandomLoraOptions): Promise<{ path: string; bytes: number; tensors: Map<string, LoraPair> }> {
  const base = await describeBase(o.basePath);
  const layers = o.layers ?? Array.from({ length: base.blockCount }, (_, i) => i);
  const tensors = new Map<string, LoraPair>();
  for (const layer of layers) {
    for (const target of o.targets) {
      const name = `blk.${layer}.${LORA_TARGET_TENSORS[target]}.weight`;
      const dims = base.shapes.get(name);
      if (!dims || dims.length !== 2) throw new Error(`${o.basePath} has no 2-D tensor ${name}`);
      const [nIn, nOut] = dims as [number, number];
      tensors.set(name, {
        a: normalTensor(o.seed, `${name}.lora_a`, o.rank * nIn, 1 / Math.sqrt(nIn)),
        b: o.zeroB ? new Float32Array(nOut * o.rank) : normalTensor(o.seed, `${name}.lora_b`, nOut * o.rank, 1 / Math.sqrt(o.rank)),
      });
    }
  }
  const written = await writeLoraAdapter({ path: o.path, base, alpha: o.alpha, rank: o.rank, tensors });
  return { ...written, tensors };
}
