// Helpers for deriving an architecture's tensor plan from llama's: most decoders are llama with a
// few tensors added (biases, extra norms) or fused, so each spec rewrites llama's plan per tensor
// instead of restating it.
import { gv } from "../gguf/values.js";
import type { GgufValue } from "../gguf/types.js";
import { llamaTensorPlan, type LlamaTensorPlan } from "./llama-layout.js";
import type { ArchShape } from "./types.js";

/**
 * Init std of attention biases: clearly non-zero, so a reader that dropped them would be caught
 * by a parity check, yet below the O(1) spread of the projections they are added to.
 */
export const BIAS_STD = 0.5;

/** "blk.3.attn_q.weight" -> { block: "blk.3", local: "attn_q.weight" }; undefined outside blocks. */
function splitName(name: string): { block: string; local: string } | undefined {
  const m = /^(blk\.\d+)\.(.+)$/.exec(name);
  return m ? { block: m[1]!, local: m[2]! } : undefined;
}

/**
 * llama's plan for `s` with every per-layer tensor passed through `rewrite(local, block, t)`,
 * which returns what replaces it (itself plus extras, a fused tensor, or nothing).
 */
export function rewriteLlamaPlan(
  s: ArchShape,
  rewrite: (local: string, block: string, t: LlamaTensorPlan) => LlamaTensorPlan[],
): LlamaTensorPlan[] {
  return llamaTensorPlan(s).flatMap((t) => {
    const parts = splitName(t.name);
    return parts ? rewrite(parts.local, parts.block, t) : [t];
  });
}

/** A 1-D norm weight of ones. */
export function norm(name: string, size: number): LlamaTensorPlan {
  return { name, dims: [size], std: undefined };
}

/** attention.key_length / value_length, for architectures whose head size is free. */
export function headDimKeys(prefix: string, s: ArchShape): [string, GgufValue][] {
  return [
    [`${prefix}.attention.key_length`, gv.u32(s.headDim)],
    [`${prefix}.attention.value_length`, gv.u32(s.headDim)],
  ];
}
