// Spec §4.2: ART's per-token RL objective (CISPO by default, or clipped PPO) over jax arrays,
// traceable under jit/valueAndGrad. Every [R, T] input uses one alignment (position t holds the
// values of one predicted token); R rows, one tokenized history each. Arguments are consumed, as
// jax-js functions do. ./reference-loss.ts is the same objective in float64 plain JS.
import { lax, numpy as np } from "@jax-js/jax";
import type { RlConfig } from "./config.js";

export type RlLossData = {
  /** [R, T] sampling-time (or, with precalculate_logprobs, recomputed) log-probs; NaN = none. */
  oldLogprobs: np.Array;
  /** [R] or [R, T] final advantages (planRlRows). */
  advantages: np.Array;
  /** [R] or [R, T] final token weights (planRlRows). */
  weights: np.Array;
  /** [R, T] 1 on trainable tokens, else 0. */
  mask: np.Array;
  /** [R, T] the sampler's log-probs when oldLogprobs were recomputed (precalculate_logprobs); NaN = none. */
  originalLogprobs?: np.Array;
  /** [R, T] reference-policy log-probs for the KL-penalised advantage (kl_penalty_coef > 0). */
  refLogprobs?: np.Array;
};

export type LossKnobs = Pick<
  RlConfig,
  | "lossFn"
  | "epsilon"
  | "epsilonHigh"
  | "importanceSamplingLevel"
  | "maxNegativeAdvantageImportanceSamplingWeight"
  | "maskProbRatio"
  | "kimiK2Tau"
  | "truncatedImportanceSampling"
  | "klPenaltyCoef"
  | "klPenaltySource"
>;

/**
 * "row-mean" (ART/Unsloth, one row per optimizer step): each row's Σ ℓ·w·m / (Σ m + 1e-18), then
 * averaged over the rows that have trainable tokens (= ART's loss when R = 1).
 * "token-mean" (Megatron's sum reduction divided by the step's trainable tokens): Σ ℓ·w·m / (Σ m + 1e-18).
 */
export type LossReduction = "row-mean" | "token-mean";

export interface RlLossResult {
  loss: np.Array;
  /** Scalars: `entropy` when options.entropy was given; `kl_policy_ref` when the KL penalty is active. */
  metrics: Record<string, np.Array>;
}

export function rlLoss(newLogprobs: np.Array, data: RlLossData, config: LossKnobs, options: { reduction?: LossReduction; entropy?: np.Array } = {}): RlLossResult {
  const reduction = options.reduction ?? "row-mean";
  const R = newLogprobs.shape[0]!;
  const perRow = (x: np.Array) => (x.ndim === 1 ? x.reshape([R, 1]) : x);
  const m = data.mask;
  const on = m.ref.greater(0);
  const rowCount = m.ref.sum(1, { keepdims: true }); // [R, 1]
  const sgNew = () => lax.stopGradient(newLogprobs.ref);

  // Step 2: a missing old logprob is sg(new) (ratio 1). Non-trainable positions get the same, so
  // nothing non-finite from them can reach the loss or its gradient.
  const old = np.where(np.logicalAnd(on.ref, np.logicalNot(np.isnan(data.oldLogprobs.ref))), data.oldLogprobs, sgNew());
  // Step 3.
  const delta = newLogprobs.ref.sub(old.ref);
  // Step 4: s = exp(mean of δ over the row's trainable tokens) — one result per row.
  const seq = () => np.exp(delta.ref.mul(m.ref).sum(1, { keepdims: true }).div(np.maximum(rowCount.ref, 1)));
  let rho: np.Array;
  switch (config.importanceSamplingLevel) {
    case "token":
      rho = np.exp(delta.ref);
      break;
    case "sequence":
      rho = seq().mul(np.onesLike(delta.ref));
      break;
    case "average":
      rho = np.exp(delta.ref).add(seq()).mul(0.5);
      break;
    case "geometric_average":
      rho = np.sqrt(np.exp(delta.ref)).mul(np.sqrt(seq()));
      break;
  }
  const lo = 1 - config.epsilon;
  const hi = 1 + config.epsilonHigh;
  // Step 6: clamps every token, whatever the sign of A (spec §12.5).
  if (config.maxNegativeAdvantageImportanceSamplingWeight) rho = np.minimum(rho, config.maxNegativeAdvantageImportanceSamplingWeight);
  // Step 7: ratios outside (1 − ε, 1 + ε_high) become the constant 0.
  if (config.maskProbRatio) rho = np.where(np.logicalAnd(rho.ref.greater(lo), rho.ref.less(hi)), rho, 0);

  let advantage = perRow(data.advantages).mul(np.onesLike(delta.ref));
  // Step 8.
  if (config.kimiK2Tau) advantage = advantage.sub(lax.stopGradient(delta.ref).mul(config.kimiK2Tau));
  // Step 9: KL-penalised advantage, per row.
  const metrics: Record<string, np.Array> = {};
  const ref = data.refLogprobs;
  if (config.klPenaltyCoef > 0 && ref) {
    const source = config.klPenaltySource === "sample" ? lax.stopGradient(old.ref) : sgNew();
    const k = source.sub(np.where(on.ref, ref, 0)).mul(m.ref);
    const kBar = k.ref.sum(1, { keepdims: true }).div(rowCount.ref.add(1e-18));
    advantage = advantage.add(kBar.ref.sub(k).mul(m.ref).mul(config.klPenaltyCoef));
    metrics.kl_policy_ref = reduceRows(kBar, rowCount.ref, m.ref);
  } else ref?.dispose();

  // Step 10.
  let perToken: np.Array;
  if (config.lossFn === "ppo") {
    const clipped = np.clip(rho.ref, lo, hi).mul(advantage.ref);
    perToken = np.minimum(rho.ref.mul(advantage), clipped).neg();
  } else {
    perToken = np.clip(lax.stopGradient(rho.ref), lo, hi).mul(advantage).mul(newLogprobs.ref).neg();
  }
  // Step 11: truncated importance sampling.
  const original = data.originalLogprobs;
  if (config.truncatedImportanceSampling) {
    let q: np.Array;
    if (original) {
      const orig = np.where(np.logicalAnd(on.ref, np.logicalNot(np.isnan(original.ref))), original, sgNew());
      q = np.exp(old.ref.sub(orig));
    } else q = rho.ref;
    perToken = perToken.mul(lax.stopGradient(np.minimum(q, config.truncatedImportanceSampling)));
  } else original?.dispose();
  rho.dispose();
  old.dispose();
  delta.dispose();
  on.dispose();

  // Step 12: ℓ·w·m, then the reduction.
  const w = perRow(data.weights);
  const weighted = perToken.mul(w.ref).mul(m.ref);
  if (options.entropy) metrics.entropy = reduceTokens(options.entropy.mul(w.ref).mul(m.ref), rowCount.ref, reduction, m.ref);
  w.dispose();
  newLogprobs.dispose();
  const loss = reduceTokens(weighted, rowCount, reduction, m);
  return { loss, metrics };
}

/** Σ_t x / (Σ_t m + 1e-18) per row, then the reduction; consumes all arguments. */
function reduceTokens(x: np.Array, rowCount: np.Array, reduction: LossReduction, m: np.Array): np.Array {
  if (reduction === "token-mean") {
    rowCount.dispose();
    return x.sum().div(m.sum().add(1e-18));
  }
  return reduceRows(x.sum(1, { keepdims: true }).div(rowCount.ref.add(1e-18)), rowCount, m);
}

/** The mean of per-row values [R, 1] over the rows that have trainable tokens; consumes all arguments. */
function reduceRows(perRow: np.Array, rowCount: np.Array, m: np.Array): np.Array {
  m.dispose();
  const live = rowCount.greater(0).astype(perRow.dtype);
  return perRow.mul(live.ref).sum().div(np.maximum(live.sum(), 1));
}
