// Hand-computed values of the §4.2 objective, checked against both the jax loss and the plain-JS
// reference. Base case (one row, 3 tokens, the first not trainable):
//   new = [-0.5, -1.0, -2.0], old = [NaN, -1.2, -1.5], mask = [0, 1, 1], A = 2, w = 1
//   δ1 = -1.0 + 1.2 = 0.2 -> r1 = e^0.2 = 1.2214028;  δ2 = -2.0 + 1.5 = -0.5 -> r2 = e^-0.5 = 0.6065307
//   s (sequence) = exp(mean δ over trainable) = exp((0.2 - 0.5) / 2) = e^-0.15 = 0.8607080
//   reduction: (ℓ1 + ℓ2) · w / (Σm = 2)
import { init } from "@jax-js/jax";
import { beforeAll, describe, expect, it } from "vitest";
import { resolveRlConfig } from "./config.js";
import type { LossKnobs, LossReduction } from "./loss.js";
import { referenceLoss, type ReferenceLossInputs } from "./reference-loss.js";
import { jaxLoss } from "./test-helpers.js";

beforeAll(async () => {
  await init("wasm");
});

const CISPO: LossKnobs = resolveRlConfig({});
const PPO: LossKnobs = resolveRlConfig({ loss_fn: "ppo" });

const BASE: ReferenceLossInputs = {
  newLogprobs: [[-0.5, -1.0, -2.0]],
  oldLogprobs: [[null, -1.2, -1.5]],
  advantages: [2],
  weights: [1],
  mask: [[0, 1, 1]],
};

interface Case {
  name: string;
  config: LossKnobs;
  inputs?: Partial<ReferenceLossInputs>;
  reduction?: LossReduction;
  expected: number;
  klPolicyRef?: number;
}

const CASES: Case[] = [
  // CISPO, clip [1-1, 1+4] = [0, 5]: ℓ = -clip(sg ρ)·A·new: (1.2214028·2·1 + 0.6065307·2·2) / 2
  { name: "cispo token (defaults)", config: CISPO, expected: 2.434464077585437 },
  // PPO ε = 0.2 -> [0.8, 1.2]: ℓ1 = -min(2.4428, 1.2·2 = 2.4) = -2.4; ℓ2 = -min(1.2131, 0.8·2 = 1.6) = -1.2131; (-3.6131) / 2
  { name: "ppo token", config: PPO, expected: -1.8065306597126334 },
  // A = -2: ℓ1 = -min(-2.4428, -2.4) = 2.4428; ℓ2 = -min(-1.2131, -1.6) = 1.6; 4.0428 / 2
  { name: "ppo token, negative advantage", config: PPO, inputs: { advantages: [-2] }, expected: 2.02140275816017 },
  // ρ = s = 0.860708 on both: (0.860708·2·1 + 0.860708·2·2) / 2 = 5.165248 / 2
  { name: "cispo sequence", config: { ...CISPO, importanceSamplingLevel: "sequence" }, expected: 2.5821239292751734 },
  // s in [0.8, 1.2]: ℓ = -s·A = -1.721416 on both tokens; mean -1.721416
  { name: "ppo sequence", config: { ...PPO, importanceSamplingLevel: "sequence" }, expected: -1.7214159528501156 },
  // ρ = (r + s)/2 = [1.0410554, 0.7336193]: (1.0410554·2·1 + 0.7336193·2·2) / 2
  { name: "cispo average", config: { ...CISPO, importanceSamplingLevel: "average" }, expected: 2.508294003430305 },
  // ℓ1 = -min(2.0821, 2.0821) = -2.0821; ℓ2 = -min(0.7336·2 = 1.4672, 0.8·2 = 1.6) = -1.4672; (-3.5494) / 2
  { name: "ppo average", config: { ...PPO, importanceSamplingLevel: "average" }, expected: -1.7746746853614592 },
  // ρ = √r·√s = [e^0.025 = 1.0253151, e^-0.325 = 0.7225274]: (1.0253151·2·1 + 0.7225274·2·2) / 2
  { name: "cispo geometric_average", config: { ...CISPO, importanceSamplingLevel: "geometric_average" }, expected: 2.4703698278085735 },
  // ℓ1 = -1.0253151·2 = -2.0506; ℓ2 = -min(1.4451, 1.6) = -1.4451; (-3.4957) / 2
  { name: "ppo geometric_average", config: { ...PPO, importanceSamplingLevel: "geometric_average" }, expected: -1.747842474166501 },
  // clip [0.8, 1.1]: ρ1 -> 1.1, ρ2 -> 0.8: (1.1·2·1 + 0.8·2·2) / 2 = (2.2 + 3.2) / 2
  { name: "cispo epsilon 0.2 / epsilon_high 0.1 clipping", config: { ...CISPO, epsilon: 0.2, epsilonHigh: 0.1 }, expected: 2.7 },
  // clip [0.8, 1.3]: ℓ1 = -min(2.4428, 2.4428) = -2.4428; ℓ2 = -min(1.2131, 1.6) = -1.2131; (-3.6559) / 2
  { name: "ppo epsilon_high 0.3", config: { ...PPO, epsilonHigh: 0.3 }, expected: -1.8279334178728033 },
  // range (0.5, 1.2): ρ1 = 1.2214 -> 0; ℓ1 = -min(0·2, clip(0)=0.5·2) = 0; ℓ2 = -min(1.2131, 1.2131) = -1.2131; / 2
  { name: "ppo mask_prob_ratio", config: { ...PPO, epsilon: 0.5, epsilonHigh: 0.2, maskProbRatio: true }, expected: -0.6065306597126334 },
  // range (0.5, 1.2): ρ1 -> 0, then CISPO's clip lifts it to 0.5: (0.5·2·1 + 0.6065307·2·2) / 2
  { name: "cispo mask_prob_ratio", config: { ...CISPO, epsilon: 0.5, epsilonHigh: 0.2, maskProbRatio: true }, expected: 1.7130613194252668 },
  // ρ = min(ρ, 1): [1, 0.6065307]: (1·2·1 + 0.6065307·2·2) / 2
  { name: "max_negative_advantage_importance_sampling_weight 1", config: { ...CISPO, maxNegativeAdvantageImportanceSamplingWeight: 1 }, expected: 2.213061319425267 },
  // A_t = 2 - 0.5·δ_t = [1.9, 2.25]: (1.2214028·1.9·1 + 0.6065307·2.25·2) / 2
  { name: "kimi_k2_tau 0.5", config: { ...CISPO, kimiK2Tau: 0.5 }, expected: 2.5250266046055865 },
  // ℓ·sg(min(ρ, 1)): (2.4428055·1 + 2.4261226·0.6065307) / 2
  { name: "truncated_importance_sampling 1", config: { ...CISPO, truncatedImportanceSampling: 1 }, expected: 1.9571616405030545 },
  // precalculated: orig = [-, -1.0, -1.4]: q = exp(old - orig) = [e^-0.2, e^-0.1] -> min(q, 0.85) = [0.8187308, 0.85]
  //   (2.4428055·0.8187308 = 2.0 + 2.4261226·0.85 = 2.0622042) / 2
  {
    name: "truncated_importance_sampling with precalculated logprobs",
    config: { ...CISPO, truncatedImportanceSampling: 0.85 },
    inputs: { originalLogprobs: [[null, -1.0, -1.4]] },
    expected: 2.031102121511477,
  },
  // k = new - ref = [0.1, -0.2], k̄ = -0.05, A = 2 + 0.1·(k̄ - k) = [1.985, 2.015]: (1.2214028·1.985 + 0.6065307·2.015·2) / 2
  {
    name: "kl penalty, current_learner",
    config: { ...CISPO, klPenaltyCoef: 0.1, klPenaltySource: "current_learner" },
    inputs: { refLogprobs: [[0, -1.1, -1.8]] },
    expected: 2.434401516794925,
    klPolicyRef: -0.05,
  },
  // k = old - ref = [-0.1, 0.3], k̄ = 0.1, A = [2.02, 1.98]: (1.2214028·2.02 + 0.6065307·1.98·2) / 2
  {
    name: "kl penalty, sample",
    config: { ...CISPO, klPenaltyCoef: 0.1, klPenaltySource: "sample" },
    inputs: { refLogprobs: [[0, -1.1, -1.8]] },
    expected: 2.4345474919727854,
    klPolicyRef: 0.1,
  },
  // old1 missing -> sg(new): ρ1 = 1: (1·2·1 + 0.6065307·2·2) / 2
  { name: "missing old logprob", config: CISPO, inputs: { oldLogprobs: [[null, null, -1.5]] }, expected: 2.213061319425267 },
  // w = 0.5 halves the base case: 2.4344641 / 2
  { name: "token weight", config: CISPO, inputs: { weights: [0.5] }, expected: 1.2172320387927185 },
];

// A second row: new = [-1, -0.5, -3], old = [-, -0.7, -], mask = [0, 1, 0], A = -1, w = 1.5
//   ℓ = -(e^0.2 = 1.2214028)·(-1)·(-0.5)·1.5 = -0.9160521 over 1 token.
const TWO_ROWS: Partial<ReferenceLossInputs> = {
  newLogprobs: [BASE.newLogprobs[0]!, [-1, -0.5, -3]],
  oldLogprobs: [BASE.oldLogprobs[0]!, [null, -0.7, null]],
  advantages: [2, -1],
  weights: [1, 1.5],
  mask: [BASE.mask[0]!, [0, 1, 0]],
};
CASES.push(
  // row-mean: (4.8689281 / 2 + (-0.9160521) / 1) / 2
  { name: "two rows, row-mean", config: CISPO, inputs: TWO_ROWS, expected: 0.7592060044826547 },
  // token-mean: (4.8689281 - 0.9160521) / 3
  { name: "two rows, token-mean", config: CISPO, inputs: TWO_ROWS, reduction: "token-mean", expected: 1.317625362183582 },
  // A row without trainable tokens does not count in the row mean.
  { name: "empty row is ignored", config: CISPO, inputs: { ...TWO_ROWS, mask: [BASE.mask[0]!, [0, 0, 0]] }, expected: 2.434464077585437 },
);

describe("RL loss values", () => {
  it.each(CASES)("$name", ({ config, inputs, reduction, expected, klPolicyRef }) => {
    const x = { ...BASE, ...inputs };
    const ref = referenceLoss(x, config, reduction);
    expect(ref.loss).toBeCloseTo(expected, 12);
    const jax = jaxLoss(x, config, reduction);
    expect(Math.abs(jax.loss - expected)).toBeLessThan(2e-6 * Math.max(1, Math.abs(expected)));
    if (klPolicyRef !== undefined) {
      expect(ref.klPolicyRef).toBeCloseTo(klPolicyRef, 12);
      expect(jax.metrics.kl_policy_ref).toBeCloseTo(klPolicyRef, 6);
    } else expect(jax.metrics.kl_policy_ref).toBeUndefined();
  });

  it("reports the weighted masked mean entropy", () => {
    // Σ H·w·m / Σm = (0.5·1 + 1.5·1) · 1 / 2 = 1 (the untrained first position's 9 is ignored)
    const x = { ...BASE, entropy: [[9, 0.5, 1.5]] };
    expect(referenceLoss(x, CISPO).entropy).toBeCloseTo(1, 12);
    expect(jaxLoss(x, CISPO).metrics.entropy).toBeCloseTo(1, 6);
  });

  it("is unaffected by non-finite values on untrained positions", () => {
    const x = { ...BASE, oldLogprobs: [[-1e30, -1.2, -1.5]], refLogprobs: [[NaN, -1.1, -1.8]] };
    const config = { ...PPO, klPenaltyCoef: 0.1 };
    expect(jaxLoss(x, config).loss).toBeCloseTo(referenceLoss({ ...x, oldLogprobs: BASE.oldLogprobs }, config).loss, 5);
  });
});
