// Host-built constants of the forward pass that depend only on the sequence length T.
//
// RoPE as llama.cpp applies it to LLM_ARCH_LLAMA (LLAMA_ROPE_TYPE_NORM, ggml_rope "normal" mode):
// adjacent pairs (x[2i], x[2i+1]) of each head are rotated by θ = pos · base^(-2i / ropeDims);
// dims past ropeDims pass through; θ is divided by rope_freqs[i] when the model has that tensor and
// multiplied by freq_scale (1 / linear scaling factor). (HF checkpoints use rotate-half, and the converter permutes
// Q/K rows so the GGUF is in pair order; the trainer, like the engine, only ever sees the GGUF.)
// Applied as x·cos + (x @ R)·sin, where R maps each pair (x0, x1) to (-x1, x0): no slicing under jit.
import { numpy as np } from "@jax-js/jax";
import type { LlamaConfig } from "./config.js";

export type SeqConstants = {
  /** [T, 1, headDim] (broadcasts over heads). */
  cos: np.Array;
  sin: np.Array;
  /** [headDim, headDim] pair rotation. */
  rot: np.Array;
  /** [group · T, T] additive causal mask, group = heads / kvHeads (see forward.ts). */
  causal: np.Array;
};

export function seqConstants(cfg: LlamaConfig, seqLen: number): SeqConstants {
  const d = cfg.headDim;
  const cos = new Float32Array(seqLen * d);
  const sin = new Float32Array(seqLen * d);
  // ggml_rope_cache_init, in float32 as ggml computes it: θ starts at the position and is
  // multiplied by theta_scale = base^(-2/ropeDims) once per pair. Matching the rounding keeps
  // long positions within ~1e-6 of the engine instead of drifting by ~1e-4 rad.
  const f = Math.fround;
  const thetaScale = f(Math.pow(f(cfg.ropeBase), f(-2 / cfg.ropeDims)));
  const freqScale = f(cfg.ropeFreqScale);
  const factors = cfg.ropeFreqFactors;
  for (let t = 0; t < seqLen; t++) {
    let theta = f(t);
    for (let j = 0; j < d; j += 2) {
      const at = t * d + j;
      if (j >= cfg.ropeDims) {
        cos[at] = cos[at + 1] = 1;
        continue;
      }
      // rope_yarn(theta / ff, freq_scale, ...) with ext_factor 0 and mscale 1.
      const angle = f(freqScale * (factors ? f(theta / factors[j >> 1]!) : theta));
      cos[at] = cos[at + 1] = Math.cos(angle);
      sin[at] = sin[at + 1] = Math.sin(angle);
      theta = f(theta * thetaScale);
    }
  }
  const rot = new Float32Array(d * d);
  // (x @ R)[2i] = -x[2i+1], (x @ R)[2i+1] = x[2i]
  for (let i = 0; 2 * i + 1 < d; i++) {
    rot[(2 * i + 1) * d + 2 * i] = -1;
    rot[2 * i * d + 2 * i + 1] = 1;
  }
  const group = cfg.heads / cfg.kvHeads;
  const causal = new Float32Array(group * seqLen * seqLen);
  for (let g = 0; g < group; g++) {
    for (let q = 0; q < seqLen; q++) {
      const row = (g * seqLen + q) * seqLen;
      // A large finite value, not -inf: -inf turns into NaN in the softmax gradient.
      for (let k = q + 1; k < seqLen; k++) causal[row + k] = -1e9;
    }
  }
  return {
    cos: np.array(cos).reshape([seqLen, 1, d]),
    sin: np.array(sin).reshape([seqLen, 1, d]),
    rot: np.array(rot).reshape([d, d]),
    causal: np.array(causal).reshape([group * seqLen, seqLen]),
  };
}
