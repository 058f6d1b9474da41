// Host rows -> the loss's [R, T] inputs in the model's layout (services/training/trainer/model/
// inputs.ts): position t predicts token t + 1, so every per-token value of token t + 1 sits at t
// (spec §4.1's shift-left); the last position and the padding are masked.
import { numpy as np } from "@jax-js/jax";
import type { RlLossData } from "./loss.js";

export interface RlBatchRow {
  assistantMask: readonly boolean[];
  oldLogprobs: readonly (number | null)[];
}

export interface RlBatchOptions {
  /**
   * precalculate_logprobs: the pre-update policy's log-probs per row, already in the model layout
   * (CausalLm.logprobs: value t = log p(token t + 1)). They become oldLogprobs and the rows'
   * sampler logprobs become originalLogprobs.
   */
  recomputedOldLogprobs?: readonly ArrayLike<number>[];
  /** KL penalty: the reference policy's log-probs per row, in the model layout. */
  refLogprobs?: readonly ArrayLike<number>[];
}

/** rows[r] with its final advantage / weight (RowPlan of planRlRows), right-padded to seqLen. */
export function rlLossData(rows: readonly RlBatchRow[], plans: readonly { advantage: number; weight: number }[], seqLen: number, options: RlBatchOptions = {}): RlLossData {
  const R = rows.length;
  const mask = new Float32Array(R * seqLen);
  const sampled = new Float32Array(R * seqLen).fill(NaN);
  rows.forEach((row, r) => {
    if (row.assistantMask.length > seqLen) throw new Error(`row ${r} has ${row.assistantMask.length} tokens, more than ${seqLen}`);
    for (let t = 0; t + 1 < row.assistantMask.length; t++) {
      mask[r * seqLen + t] = row.assistantMask[t + 1] ? 1 : 0;
      sampled[r * seqLen + t] = row.oldLogprobs[t + 1] ?? NaN;
    }
  });
  const grid = (values: Float32Array) => np.array(values).reshape([R, seqLen]);
  const perRow = (values: number[]) => np.array(new Float32Array(values));
  const data: RlLossData = {
    oldLogprobs: grid(options.recomputedOldLogprobs ? padded(options.recomputedOldLogprobs, R, seqLen) : sampled),
    advantages: perRow(plans.map((p) => p.advantage)),
    weights: perRow(plans.map((p) => p.weight)),
    mask: grid(mask),
  };
  if (options.recomputedOldLogprobs) data.originalLogprobs = grid(sampled);
  if (options.refLogprobs) data.refLogprobs = grid(padded(options.refLogprobs, R, seqLen));
  return data;
}

function padded(rows: readonly ArrayLike<number>[], R: number, seqLen: number): Float32Array {
  const out = new Float32Array(R * seqLen);
  for (let r = 0; r < R; r++) {
    const row = rows[r] ?? [];
    for (let t = 0; t < Math.min(row.length, seqLen); t++) out[r * seqLen + t] = row[t]!;
  }
  return out;
}
