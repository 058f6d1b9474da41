// The tensors of a llama-architecture GGUF (names and ggml dims as llama.cpp's models/llama.cpp
// creates them) and how each is initialised for a random tiny model.
//
// Init, and why it is not the usual N(0, 0.02): at d=128 a 0.02 init gives logits with a spread of
// ~0.2 across the vocabulary, so the next-token distribution is almost flat, greedy picks are
// decided by noise and top-k / logit-bias tests mean little. Instead:
// - every projection ~ N(0, 1/fan_in), so each attention and MLP block adds O(1) to the residual
//   stream and the prompt (not just the last token) shapes the output;
// - token embeddings ~ N(0, 1), comparable to the blocks' contributions;
// - the output head ~ N(0, (OUTPUT_LOGIT_STD² / d)): after the final RMS norm the logits spread
//   with std ≈ OUTPUT_LOGIT_STD = 2.5, so the top token is clearly ahead (typically 10-40%
//   probability) but the distribution is far from one-hot;
// - with a tied head the embedding matrix doubles as the head, so it takes the head's std;
// - norm weights are 1.

export const OUTPUT_LOGIT_STD = 2.5;

export interface LlamaShape {
  layers: number;
  embedding: number;
  heads: number;
  kvHeads: number;
  /** Size of one attention head. Default embedding / heads (llama's only choice). */
  headDim?: number;
  ff: number;
  vocab: number;
  tiedOutput: boolean;
}

export interface LlamaTensorPlan {
  name: string;
  /** ggml order: ne0 (input features of a projection) first. */
  dims: number[];
  /** undefined: a norm weight, all ones. */
  std: number | undefined;
}

export function llamaTensorPlan(s: LlamaShape): LlamaTensorPlan[] {
  const headDim = s.headDim ?? s.embedding / s.heads;
  const qOut = headDim * s.heads;
  const kvOut = headDim * s.kvHeads;
  const outputStd = OUTPUT_LOGIT_STD / Math.sqrt(s.embedding);
  const proj = (name: string, nIn: number, nOut: number): LlamaTensorPlan => ({ name, dims: [nIn, nOut], std: 1 / Math.sqrt(nIn) });
  const plan: LlamaTensorPlan[] = [
    { name: "token_embd.weight", dims: [s.embedding, s.vocab], std: s.tiedOutput ? outputStd : 1 },
  ];
  for (let i = 0; i < s.layers; i++) {
    const b = `blk.${i}`;
    plan.push(
      { name: `${b}.attn_norm.weight`, dims: [s.embedding], std: undefined },
      proj(`${b}.attn_q.weight`, s.embedding, qOut),
      proj(`${b}.attn_k.weight`, s.embedding, kvOut),
      proj(`${b}.attn_v.weight`, s.embedding, kvOut),
      proj(`${b}.attn_output.weight`, qOut, s.embedding),
      { name: `${b}.ffn_norm.weight`, dims: [s.embedding], std: undefined },
      proj(`${b}.ffn_gate.weight`, s.embedding, s.ff),
      proj(`${b}.ffn_up.weight`, s.embedding, s.ff),
      proj(`${b}.ffn_down.weight`, s.ff, s.embedding),
    );
  }
  plan.push({ name: "output_norm.weight", dims: [s.embedding], std: undefined });
  if (!s.tiedOutput) plan.push({ name: "output.weight", dims: [s.embedding, s.vocab], std: outputStd });
  return plan;
}

/** Short LoRA target names -> the per-layer tensor they adapt. */
export const LORA_TARGET_TENSORS = {
  q: "attn_q",
  k: "attn_k",
  v: "attn_v",
  o: "attn_output",
  gate: "ffn_gate",
  up: "ffn_up",
  down: "ffn_down",
} as const;

export type LoraTarget = keyof typeof LORA_TARGET_TENSORS;
