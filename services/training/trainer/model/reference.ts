// A plain-JS float64 llama forward pass, written independently of forward.ts (loops, no jax),
// for tests: it checks the jax forward and, through central differences, the jax gradients.
// Slow by design; use it on very small models only.
import { GgufReader } from "../../../weights/gguf/index.js";
import { llamaConfigFromGguf, type LlamaConfig } from "./config.js";
import { loraScale, type LoraWeights } from "./lora.js";

type Mat = { rows: number; cols: number; w: Float64Array }; // W: rows = n_out, cols = n_in

export interface ReferenceModel {
  config: LlamaConfig;
  tensors: Map<string, Float64Array>;
  mats: Map<string, Mat>;
}

export async function loadReference(path: string): Promise<ReferenceModel> {
  const reader = await GgufReader.open(path);
  try {
    const config = llamaConfigFromGguf(reader.metadata, new Set(reader.tensors.map((t) => t.name)));
    if (reader.tensor("rope_freqs.weight")) config.ropeFreqFactors = await reader.readTensor("rope_freqs.weight");
    const tensors = new Map<string, Float64Array>();
    const mats = new Map<string, Mat>();
    for (const t of reader.tensors) {
      const w = Float64Array.from(await reader.readTensor(t.name));
      tensors.set(t.name, w);
      if (t.dims.length === 2) mats.set(t.name, { rows: t.dims[1]!, cols: t.dims[0]!, w });
    }
    return { config, tensors, mats };
  } finally {
    await reader.close();
  }
}

/** logprobs[t] = log p(tokens[t+1] | tokens[..t]) for t < len-1. */
export function referenceLogprobs(m: ReferenceModel, lora: LoraWeights | null, tokens: readonly number[]): Float64Array {
  const c = m.config;
  const T = tokens.length;
  const d = c.embedding;
  const emb = m.tensors.get("token_embd.weight")!;
  let x = tokens.map((tok) => Array.from(emb.subarray(tok * d, (tok + 1) * d)));
  const scale = lora ? loraScale(lora.spec) : 0;
  const linear = (name: string, v: number[]): number[] => {
    const W = m.mats.get(name)!;
    const y = new Array<number>(W.rows).fill(0);
    for (let o = 0; o < W.rows; o++) {
      let s = 0;
      for (let i = 0; i < W.cols; i++) s += W.w[o * W.cols + i]! * v[i]!;
      y[o] = s;
    }
    const pair = lora?.tensors.get(name);
    if (pair && lora) {
      const r = lora.spec.rank;
      const ax = new Array<number>(r).fill(0);
      for (let k = 0; k < r; k++) for (let i = 0; i < pair.nIn; i++) ax[k]! += pair.a[i * r + k]! * v[i]!;
      for (let o = 0; o < pair.nOut; o++) {
        let s = 0;
        for (let k = 0; k < r; k++) s += pair.b[k * pair.nOut + o]! * ax[k]!;
        y[o]! += scale * s;
      }
    }
    return y;
  };
  const norm = (v: number[], w: Float64Array): number[] => {
    const ms = v.reduce((a, b) => a + b * b, 0) / v.length;
    const inv = 1 / Math.sqrt(ms + c.rmsEps);
    return v.map((e, i) => e * inv * w[i]!);
  };
  const rope = (v: number[], heads: number, pos: number): number[] => {
    const out = v.slice();
    for (let h = 0; h < heads; h++) {
      for (let i = 0; 2 * i < c.ropeDims; i++) {
        const theta = (c.ropeFreqScale * pos * Math.pow(c.ropeBase, (-2 * i) / c.ropeDims)) / (c.ropeFreqFactors?.[i] ?? 1);
        const j = h * c.headDim + 2 * i;
        const x0 = v[j]!;
        const x1 = v[j + 1]!;
        out[j] = x0 * Math.cos(theta) - x1 * Math.sin(theta);
        out[j + 1] = x0 * Math.sin(theta) + x1 * Math.cos(theta);
      }
    }
    return out;
  };
  for (let l = 0; l < c.layers; l++) {
    const b = `blk.${l}`;
    const h = x.map((v) => norm(v, m.tensors.get(`${b}.attn_norm.weight`)!));
    const q = h.map((v, t) => rope(linear(`${b}.attn_q.weight`, v), c.heads, t));
    const k = h.map((v, t) => rope(linear(`${b}.attn_k.weight`, v), c.kvHeads, t));
    const val = h.map((v) => linear(`${b}.attn_v.weight`, v));
    const group = c.heads / c.kvHeads;
    const attn = q.map((qt, t) => {
      const out = new Array<number>(c.heads * c.headDim).fill(0);
      for (let hd = 0; hd < c.heads; hd++) {
        const kv = Math.floor(hd / group);
        const scores: number[] = [];
        for (let s = 0; s <= t; s++) {
          let dot = 0;
          for (let i = 0; i < c.headDim; i++) dot += qt[hd * c.headDim + i]! * k[s]![kv * c.headDim + i]!;
          scores.push(dot / Math.sqrt(c.headDim));
        }
        const mx = Math.max(...scores);
        const ex = scores.map((s) => Math.exp(s - mx));
        const z = ex.reduce((a, e) => a + e, 0);
        for (let s = 0; s <= t; s++) {
          for (let i = 0; i < c.headDim; i++) out[hd * c.headDim + i]! += (ex[s]! / z) * val[s]![kv * c.headDim + i]!;
        }
      }
      return out;
    });
    x = x.map((v, t) => {
      const o = linear(`${b}.attn_output.weight`, attn[t]!);
      return v.map((e, i) => e + o[i]!);
    });
    x = x.map((v) => {
      const n = norm(v, m.tensors.get(`${b}.ffn_norm.weight`)!);
      const g = linear(`${b}.ffn_gate.weight`, n);
      const u = linear(`${b}.ffn_up.weight`, n);
      const act = g.map((e, i) => (e / (1 + Math.exp(-e))) * u[i]!);
      const dn = linear(`${b}.ffn_down.weight`, act);
      return v.map((e, i) => e + dn[i]!);
    });
  }
  const head = m.mats.has("output.weight") ? "output.weight" : "token_embd.weight";
  const out = new Float64Array(Math.max(0, T - 1));
  for (let t = 0; t + 1 < T; t++) {
    const n = norm(x[t]!, m.tensors.get("output_norm.weight")!);
    const logits = linear(head, n);
    const mx = Math.max(...logits);
    const lse = mx + Math.log(logits.reduce((a, e) => a + Math.exp(e - mx), 0));
    out[t] = logits[tokens[t + 1]!]! - lse;
  }
  return out;
}

/** Spec §7.3 loss of one batch: -Σ label logprobs / number of labels (mask over logprob positions). */
export function referenceSftLoss(m: ReferenceModel, lora: LoraWeights, rows: readonly { tokens: number[]; labelMask: number[] }[]): number {
  let sum = 0;
  let n = 0;
  for (const r of rows) {
    const lp = referenceLogprobs(m, lora, r.tokens);
    lp.forEach((v, t) => {
      if (r.labelMask[t]) {
        sum += v;
        n += 1;
      }
    });
  }
  return -sum / n;
}
