// phi3: llama's blocks with NEOX RoPE and two fused projections, as Phi-3 checkpoints store them:
// attn_qkv = [q; k; v] (ggml dims [embedding, q + 2·kv]) and ffn_up = [gate; up] (dims
// [embedding, 2·ff]; llama.cpp's SWIGLU and transformers' Phi3MLP both take the first half as the
// gate). No ffn_gate. transformers maps them straight onto qkv_proj and gate_up_proj.
// No sliding window: llama.cpp disables phi3's, and transformers' Phi3Config defaults to none.
// Not named tiny-phi3: see PHI3_NAME in tiny-model.ts.
import { rewriteLlamaPlan } from "./plan.js";
import type { ArchitectureSpec } from "./types.js";

export const phi3: ArchitectureSpec = {
  gguf: "phi3",
  defaultName: "tiny-phi",
  outputHead: "untied",
  slidingWindow: false,
  metadata: () => [],
  tensors: (s) =>
    rewriteLlamaPlan(s, (local, b, t) => {
      const std = 1 / Math.sqrt(s.embedding);
      switch (local) {
        case "attn_q.weight":
          return [{ name: `${b}.attn_qkv.weight`, dims: [s.embedding, (s.heads + 2 * s.kvHeads) * s.headDim], std }];
        case "ffn_up.weight":
          return [{ name: `${b}.ffn_up.weight`, dims: [s.embedding, 2 * s.ff], std }];
        case "attn_k.weight":
        case "attn_v.weight":
        case "ffn_gate.weight":
          return [];
        default:
          return [t];
      }
    }),
};
