// Host side of a batch: token rows -> padded jax inputs of the forward pass.
import { numpy as np } from "@jax-js/jax";
import type { ForwardInputs } from "./forward.js";
import { seqConstants } from "./rope.js";
import type { BaseModel } from "./weights.js";

/**
 * Every distinct [R, T] compiles the jitted step again (seconds), so sequence lengths are rounded
 * up to a few sizes: multiples of 16 up to 64, then of 64, then of 256.
 */
export function bucketLength(n: number): number {
  const step = n <= 64 ? 16 : n <= 512 ? 64 : 256;
  return Math.max(step, Math.ceil(n / step) * step);
}

/**
 * rows (right-padded to seqLen, which must cover the longest row) as forward inputs: position t
 * predicts token t+1 of its row; padding and the last position predict token 0 and must be masked
 * by the caller. Right padding needs no attention mask: the causal mask already hides it.
 */
export function forwardInputs(base: BaseModel, rows: readonly (readonly number[])[], seqLen: number): ForwardInputs {
  const { embedding: d, vocab } = base.config;
  const R = rows.length;
  const embeds = new Float32Array(R * seqLen * d);
  const targets = new Int32Array(R * seqLen);
  rows.forEach((row, r) => {
    if (row.length > seqLen) throw new Error(`row ${r} has ${row.length} tokens, more than ${seqLen}`);
    for (let t = 0; t < row.length; t++) {
      const token = row[t]!;
      if (!Number.isInteger(token) || token < 0 || token >= vocab) throw new Error(`token id ${token} is outside the vocabulary (0..${vocab - 1})`);
      embeds.set(base.embeddings.subarray(token * d, (token + 1) * d), (r * seqLen + t) * d);
      if (t + 1 < row.length) targets[r * seqLen + t] = row[t + 1]!;
    }
  });
  return {
    embeds: np.array(embeds).reshape([R, seqLen, d]),
    targets: np.array(targets, { dtype: np.int32 }).reshape([R, seqLen]),
    seq: seqConstants(base.config, seqLen),
  };
}
