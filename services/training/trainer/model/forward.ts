// The llama forward pass (llama.cpp's LLM_ARCH_LLAMA graph) as a traceable jax-js function:
// RMSNorm, normal RoPE, grouped-query causal attention, SwiGLU, output head; LoRA on the layer
// projections. Everything here consumes its array arguments (jax-js ownership): callers pass
// `.ref`s of what they keep.
import { nn, numpy as np } from "@jax-js/jax";
import type { LlamaConfig } from "./config.js";
import type { LoraArrays } from "./lora.js";
import type { SeqConstants } from "./rope.js";
import { projectionTensorName, type BaseArrays, type Projection } from "./weights.js";

export type ForwardInputs = {
  /** [R, T, embedding] token embeddings (looked up on the host). */
  embeds: np.Array;
  /** [R, T] int32: the token each position predicts (the next token; anything where unused). */
  targets: np.Array;
  seq: SeqConstants;
};

export interface ForwardOptions {
  config: LlamaConfig;
  /** alpha / rank. */
  loraScale: number;
  /** Also return the entropy of each position's next-token distribution. */
  entropy: boolean;
}

export type ForwardOutputs = {
  /** [R, T]: log p(targets[r, t] | tokens[r, ≤t]). */
  logprobs: np.Array;
  /** [R, T] (only with options.entropy; otherwise absent). */
  entropy?: np.Array;
};

export function forward(lora: LoraArrays, base: BaseArrays, inputs: ForwardInputs, o: ForwardOptions): ForwardOutputs {
  const c = o.config;
  const [R, T] = inputs.targets.shape as [number, number];
  const { seq } = inputs;
  let x = inputs.embeds;
  base.layers.forEach((w, layer) => {
    const proj = (h: np.Array, p: Projection, weight: np.Array): np.Array => {
      const y = np.matmul(h.ref, weight);
      const pair = lora[projectionTensorName(layer, p)];
      if (!pair) {
        h.dispose();
        return y;
      }
      return y.add(np.matmul(np.matmul(h, pair.a), pair.b).mul(o.loraScale));
    };
    // --- attention
    const h = rmsNorm(x.ref, w.attnNorm, c.rmsEps);
    const q = rope(proj(h.ref, "q", w.q).reshape([R, T, c.heads, c.headDim]), seq);
    const k = rope(proj(h.ref, "k", w.k).reshape([R, T, c.kvHeads, c.headDim]), seq);
    const v = proj(h, "v", w.v).reshape([R, T, c.kvHeads, c.headDim]);
    const attn = attention(q, k, v, seq.causal.ref, c);
    x = x.add(proj(attn, "o", w.o));
    // --- SwiGLU MLP
    const m = rmsNorm(x.ref, w.ffnNorm, c.rmsEps);
    const gate = nn.silu(proj(m.ref, "gate", w.gate));
    const up = proj(m, "up", w.up);
    x = x.add(proj(gate.mul(up), "down", w.down));
  });
  seq.cos.dispose();
  seq.sin.dispose();
  seq.rot.dispose();
  seq.causal.dispose();
  const logits = np.matmul(rmsNorm(x, base.outNorm, c.rmsEps), base.output); // [R, T, V]
  const logp = nn.logSoftmax(logits, -1);
  const onehot = nn.oneHot(inputs.targets, c.vocab);
  if (!o.entropy) return { logprobs: np.sum(logp.mul(onehot), -1) };
  const logprobs = np.sum(logp.ref.mul(onehot), -1);
  const entropy = np.sum(np.exp(logp.ref).mul(logp), -1).neg();
  return { logprobs, entropy };
}

/** x / sqrt(mean(x²) + eps) · w over the last axis (ggml_rms_norm then ggml_mul). */
function rmsNorm(x: np.Array, weight: np.Array, eps: number): np.Array {
  const ms = np.mean(np.square(x.ref), -1, { keepdims: true });
  return x.div(np.sqrt(ms.add(eps))).mul(weight);
}

/** x: [R, T, heads, headDim]. */
function rope(x: np.Array, seq: SeqConstants): np.Array {
  const rotated = np.matmul(x.ref, seq.rot.ref);
  return x.mul(seq.cos.ref).add(rotated.mul(seq.sin.ref));
}

/**
 * Causal grouped-query attention with llama.cpp's head mapping (query head h reads kv head
 * h / group). Query heads of one kv head are stacked along the row axis, [R, kv, group·T, d], so
 * one batched matmul against that kv head's [R, kv, d, T] keys serves the whole group without
 * repeating K and V.
 */
function attention(q: np.Array, k: np.Array, v: np.Array, causal: np.Array, c: LlamaConfig): np.Array {
  const [R, T] = q.shape as [number, number];
  const group = c.heads / c.kvHeads;
  const qs = q.transpose([0, 2, 1, 3]).reshape([R, c.kvHeads, group * T, c.headDim]);
  const kt = k.transpose([0, 2, 3, 1]); // [R, kv, d, T]
  const vs = v.transpose([0, 2, 1, 3]); // [R, kv, T, d]
  const scores = np.matmul(qs, kt).mul(1 / Math.sqrt(c.headDim)).add(causal);
  const out = np.matmul(nn.softmax(scores, -1), vs); // [R, kv, group·T, d]
  return out.reshape([R, c.heads, T, c.headDim]).transpose([0, 2, 1, 3]).reshape([R, T, c.heads * c.headDim]);
}
