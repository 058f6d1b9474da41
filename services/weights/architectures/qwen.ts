// qwen2 and qwen3: llama's blocks with NEOX (half-split) RoPE, so q/k are stored unpermuted.
// qwen2 adds q/k/v biases; qwen3 drops them and RMS-normalises each q and k head (attn_q_norm,
// attn_k_norm) before RoPE.
import { BIAS_STD, headDimKeys, norm, rewriteLlamaPlan } from "./plan.js";
import type { ArchitectureSpec } from "./types.js";

export const qwen2: ArchitectureSpec = {
  gguf: "qwen2",
  outputHead: "untied",
  slidingWindow: false,
  metadata: () => [],
  tensors: (s) =>
    rewriteLlamaPlan(s, (local, b, t) => {
      if (local !== "attn_v.weight") return [t];
      const qOut = s.heads * s.headDim;
      const kvOut = s.kvHeads * s.headDim;
      return [
        t,
        { name: `${b}.attn_q.bias`, dims: [qOut], std: BIAS_STD },
        { name: `${b}.attn_k.bias`, dims: [kvOut], std: BIAS_STD },
        { name: `${b}.attn_v.bias`, dims: [kvOut], std: BIAS_STD },
      ];
    }),
};

/**
 * The head size defaults to 128 because transformers does not read qwen3's key_length: its
 * Qwen3Config keeps head_dim = 128 whatever the file says.
 */
export const qwen3: ArchitectureSpec = {
  gguf: "qwen3",
  defaultHeadDim: 128,
  outputHead: "untied",
  slidingWindow: false,
  metadata: (s) => headDimKeys("qwen3", s),
  tensors: (s) =>
    rewriteLlamaPlan(s, (local, b, t) =>
      local === "attn_v.weight" ? [t, norm(`${b}.attn_q_norm.weight`, s.headDim), norm(`${b}.attn_k_norm.weight`, s.headDim)] : [t],
    ),
};
