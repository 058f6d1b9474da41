// Test support: run the jax loss on plain-JS inputs (float32 arrays).
import { numpy as np } from "@jax-js/jax";
import { rlLoss, type LossKnobs, type LossReduction, type RlLossData } from "./loss.js";
import type { ReferenceLossInputs } from "./reference-loss.js";

export const grid = (rows: readonly (readonly (number | null)[])[]) =>
  np.array(new Float32Array(rows.flatMap((r) => r.map((v) => v ?? NaN))), { shape: [rows.length, rows[0]!.length] });
export const vector = (values: readonly number[]) => np.array(new Float32Array(values));

/** The loss's data arrays (everything but newLogprobs) for these inputs. */
export function lossData(x: ReferenceLossInputs): RlLossData {
  return {
    oldLogprobs: grid(x.oldLogprobs),
    advantages: vector(x.advantages),
    weights: vector(x.weights),
    mask: grid(x.mask),
    ...(x.originalLogprobs ? { originalLogprobs: grid(x.originalLogprobs) } : {}),
    ...(x.refLogprobs ? { refLogprobs: grid(x.refLogprobs) } : {}),
  };
}

export function jaxLoss(x: ReferenceLossInputs, config: LossKnobs, reduction: LossReduction = "row-mean"): { loss: number; metrics: Record<string, number> } {
  const { loss, metrics } = rlLoss(grid(x.newLogprobs), lossData(x), config, { reduction, ...(x.entropy ? { entropy: grid(x.entropy) } : {}) });
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(metrics)) out[k] = v.item();
  return { loss: loss.item(), metrics: out };
}
