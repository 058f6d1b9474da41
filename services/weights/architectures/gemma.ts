// gemma2 and gemma3: embeddings scaled by sqrt(embedding), GELU-tanh gated MLP, NEOX RoPE, an
// extra RMS norm after attention (post_attention_norm) and after the MLP (post_ffw_norm), a tied
// output head, and sliding-window attention on some layers (gemma2: every other layer from the
// first; gemma3: five of every six). gemma3 adds per-head q/k norms and drops soft-capping.
//
// Norm weights are stored as llama.cpp computes them, x·w; gemma's checkpoints hold w - 1 (they
// compute x·(1 + w)), so llama.cpp's converter adds 1 and transformers subtracts it back. Our
// all-ones norms are therefore gemma's zero-initialised ones.
//
// Neither reader takes everything from the file, hence the fixed choices here:
// - transformers scales attention scores by query_pre_attn_scalar^-1/2 with a Gemma2/3Config
//   default of 256 that no GGUF key sets, while llama.cpp uses head_dim^-1/2 (n_embd/n_head for
//   the 27B sizes only): the head size defaults to 256 so both use 1/16.
// - gemma2's soft-caps are read by llama.cpp but not by transformers (defaults 50 and 30): the
//   file states transformers' values.
// - gemma3's sliding layers use RoPE base 10000 in both (transformers' rope_local_base_freq is not
//   mapped from the file either); rope.freq_base applies to its global layers only.
import { gv } from "../gguf/values.js";
import type { LlamaTensorPlan } from "./llama-layout.js";
import { headDimKeys, norm, rewriteLlamaPlan } from "./plan.js";
import type { ArchitectureSpec, ArchShape } from "./types.js";

const GEMMA_HEAD_DIM = 256;
const ATTN_SOFTCAP = 50;
const FINAL_SOFTCAP = 30;
const LOCAL_ROPE_BASE = 10000;

function gemmaPlan(s: ArchShape, qkNorms: boolean): LlamaTensorPlan[] {
  return rewriteLlamaPlan(s, (local, b, t) => {
    switch (local) {
      case "attn_v.weight":
        return qkNorms ? [t, norm(`${b}.attn_q_norm.weight`, s.headDim), norm(`${b}.attn_k_norm.weight`, s.headDim)] : [t];
      case "attn_output.weight":
        return [t, norm(`${b}.post_attention_norm.weight`, s.embedding)];
      case "ffn_down.weight":
        return [t, norm(`${b}.post_ffw_norm.weight`, s.embedding)];
      default:
        return [t];
    }
  });
}

export const gemma2: ArchitectureSpec = {
  gguf: "gemma2",
  defaultHeadDim: GEMMA_HEAD_DIM,
  outputHead: "tied-only",
  slidingWindow: true,
  metadata: (s) => [
    ...headDimKeys("gemma2", s),
    ["gemma2.attention.sliding_window", gv.u32(s.slidingWindow)],
    ["gemma2.attn_logit_softcapping", gv.f32(ATTN_SOFTCAP)],
    ["gemma2.final_logit_softcapping", gv.f32(FINAL_SOFTCAP)],
  ],
  tensors: (s) => gemmaPlan(s, false),
};

export const gemma3: ArchitectureSpec = {
  gguf: "gemma3",
  defaultHeadDim: GEMMA_HEAD_DIM,
  outputHead: "tied",
  slidingWindow: true,
  metadata: (s) => [
    ...headDimKeys("gemma3", s),
    // Without it llama.cpp's gemma3 runs no sliding window at all.
    ["gemma3.attention.sliding_window", gv.u32(s.slidingWindow)],
    ["gemma3.rope.freq_base_swa", gv.f32(LOCAL_ROPE_BASE)],
  ],
  tensors: (s) => gemmaPlan(s, true),
};
