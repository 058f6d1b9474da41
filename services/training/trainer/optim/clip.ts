// Global-norm gradient clipping as torch.nn.utils.clip_grad_norm_: the norm over all gradients
// together; if it exceeds maxNorm every gradient is scaled by maxNorm / (norm + 1e-6). The norm
// before clipping is what ART reports as grad_norm (spec §6.1). Max norm: 1.0 SFT, 0.1 RL (§5.2).
import type { ParamSet } from "./adamw.js";

export function globalNorm(grads: ParamSet): number {
  let sum = 0;
  for (const g of grads.values()) for (let i = 0; i < g.length; i++) sum += g[i]! * g[i]!;
  return Math.sqrt(sum);
}

/** Scales grads in place; returns the norm before clipping. */
export function clipGradNorm(grads: ParamSet, maxNorm: number): number {
  const norm = globalNorm(grads);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) for (const g of grads.values()) for (let i = 0; i < g.length; i++) g[i] = g[i]! * coef;
  return norm;
}
