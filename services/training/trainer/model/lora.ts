// LoRA parameters: created fresh (PEFT's init), read back from an adapter GGUF, written with
// writeLoraAdapter. On the host each pair is kept in the forward pass's layout,
//   a: [n_in, rank], b: [rank, n_out]   (delta(x) = scale · x @ a @ b, scale = alpha / rank),
// i.e. the transposes of PEFT's lora_A.weight [rank x n_in] and lora_B.weight [n_out x rank],
// which is what the adapter file stores (see services/weights/lora.ts).
import { numpy as np } from "@jax-js/jax";
import { GgufReader, getNumber, getString } from "../../../weights/gguf/index.js";
import { writeLoraAdapter, type LoraPair } from "../../../weights/lora.js";
import { Prng } from "../../../weights/prng.js";
import { PROJECTION_TENSORS, PROJECTIONS, projectionTensorName, transpose, type BaseModel, type Projection } from "./weights.js";

export interface LoraSpec {
  rank: number;
  alpha: number;
  targets: readonly Projection[];
}

/** Spec §5.1: r = 8, alpha = 16, all seven projections; PEFT random_state 3407. */
export const DEFAULT_LORA: LoraSpec = { rank: 8, alpha: 16, targets: PROJECTIONS };
export const DEFAULT_LORA_SEED = 3407;

export interface LoraTensor {
  nIn: number;
  nOut: number;
  a: Float32Array;
  b: Float32Array;
}

/** Host-side LoRA state, keyed by base tensor name ("blk.0.attn_q.weight"). */
export interface LoraWeights {
  spec: LoraSpec;
  tensors: Map<string, LoraTensor>;
}

/** The jax side: a flat JsTree keyed by base tensor name. */
export type LoraArrays = { [name: string]: { a: np.Array; b: np.Array } };

/** PEFT's default init: A ~ kaiming_uniform(a=√5) = U(±1/√n_in), B = 0, so the adapter starts as a no-op. */
export function initLora(base: BaseModel, spec: LoraSpec = DEFAULT_LORA, seed = DEFAULT_LORA_SEED): LoraWeights {
  validateSpec(spec);
  const tensors = new Map<string, LoraTensor>();
  for (let layer = 0; layer < base.config.layers; layer++) {
    for (const p of spec.targets) {
      const name = projectionTensorName(layer, p);
      const [nIn, nOut] = shapeOf(base, name);
      const rng = new Prng(seed, `${name}.lora_a`);
      const bound = 1 / Math.sqrt(nIn);
      const a = new Float32Array(nIn * spec.rank);
      for (let i = 0; i < a.length; i++) a[i] = (2 * rng.uniform() - 1) * bound;
      tensors.set(name, { nIn, nOut, a, b: new Float32Array(spec.rank * nOut) });
    }
  }
  return { spec, tensors };
}

/** Reads an adapter GGUF written by exportLora (or any llama.cpp LoRA for this base). */
export async function loadLora(path: string, base: BaseModel): Promise<LoraWeights> {
  const reader = await GgufReader.open(path);
  try {
    if (getString(reader.metadata, "adapter.type") !== "lora") throw new Error(`${path} is not a LoRA adapter`);
    const arch = getString(reader.metadata, "general.architecture");
    if (arch !== base.config.architecture) throw new Error(`${path} is for ${arch}, the base model is ${base.config.architecture}`);
    const alpha = getNumber(reader.metadata, "adapter.lora.alpha");
    const tensors = new Map<string, LoraTensor>();
    const targets = new Set<Projection>();
    let rank = 0;
    for (const info of reader.tensors) {
      if (!info.name.endsWith(".lora_a")) continue;
      const name = info.name.slice(0, -".lora_a".length);
      const target = projectionOf(name);
      if (!target) throw new Error(`${path}: LoRA on ${name} is not supported by the trainer`);
      const [nIn, nOut] = shapeOf(base, name);
      const r = info.dims[1]!;
      if (rank && r !== rank) throw new Error(`${path}: mixed LoRA ranks`);
      rank = r;
      const bInfo = reader.tensor(`${name}.lora_b`);
      if (!bInfo || info.dims[0] !== nIn || bInfo.dims[0] !== r || bInfo.dims[1] !== nOut) throw new Error(`${path}: ${name} has bad LoRA shapes`);
      tensors.set(name, {
        nIn,
        nOut,
        a: transpose(await reader.readTensor(info.name), r, nIn),
        b: transpose(await reader.readTensor(`${name}.lora_b`), nOut, r),
      });
      targets.add(target);
    }
    if (tensors.size === 0 || !rank) throw new Error(`${path} has no LoRA tensors`);
    // llama.cpp reads alpha 0 (or none) as scale 1, i.e. alpha = rank.
    const spec: LoraSpec = { rank, alpha: alpha && alpha > 0 ? alpha : rank, targets: PROJECTIONS.filter((p) => targets.has(p)) };
    return { spec, tensors };
  } finally {
    await reader.close();
  }
}

export async function exportLora(lora: LoraWeights, path: string, baseModelPath: string): Promise<{ path: string; bytes: number }> {
  const r = lora.spec.rank;
  const tensors = new Map<string, LoraPair>();
  for (const [name, t] of lora.tensors) {
    tensors.set(name, { a: transpose(t.a, t.nIn, r), b: transpose(t.b, r, t.nOut) });
  }
  return writeLoraAdapter({ path, baseModelPath, alpha: lora.spec.alpha, rank: r, tensors, name: "art-lora" });
}

export function loraArrays(lora: LoraWeights): LoraArrays {
  const out: LoraArrays = {};
  for (const [name, t] of lora.tensors) {
    out[name] = { a: np.array(t.a).reshape([t.nIn, lora.spec.rank]), b: np.array(t.b).reshape([lora.spec.rank, t.nOut]) };
  }
  return out;
}

export function loraScale(spec: LoraSpec): number {
  return spec.alpha / spec.rank;
}

/** Number of trainable values. */
export function loraParameterCount(lora: LoraWeights): number {
  let n = 0;
  for (const t of lora.tensors.values()) n += t.a.length + t.b.length;
  return n;
}

/** "blk.3.attn_q.weight" -> "q"; undefined for anything that is not a layer projection. */
function projectionOf(name: string): Projection | undefined {
  const m = /^blk\.\d+\.(\w+)\.weight$/.exec(name);
  return m ? PROJECTIONS.find((p) => PROJECTION_TENSORS[p] === m[1]) : undefined;
}

function shapeOf(base: BaseModel, name: string): [number, number] {
  const d = base.shapes.get(name);
  if (!d || d.length !== 2) throw new Error(`the base model has no 2-D tensor ${name}`);
  return [d[0]!, d[1]!];
}

function validateSpec(spec: LoraSpec): void {
  if (!Number.isInteger(spec.rank) || spec.rank < 1) throw new Error("LoRA rank must be a positive integer");
  if (!(spec.alpha > 0)) throw new Error("LoRA alpha must be > 0");
  if (spec.targets.length === 0) throw new Error("LoRA needs at least one target module");
  for (const t of spec.targets) if (!PROJECTIONS.includes(t)) throw new Error(`unknown LoRA target ${t}`);
}
