// Finite-difference check of d loss / d newLogprobs: jax autodiff (float32) against central
// differences of the float64 reference, whose stop-gradients are held at the base point.
import { init, jit, numpy as np, valueAndGrad } from "@jax-js/jax";
import { beforeAll, describe, expect, it } from "vitest";
import { resolveRlConfig } from "./config.js";
import { rlLoss, type LossKnobs, type RlLossData } from "./loss.js";
import { referenceLoss, type ReferenceLossInputs } from "./reference-loss.js";
import { grid, lossData } from "./test-helpers.js";

beforeAll(async () => {
  await init("wasm");
});

// Ratios stay clear of every clip / mask boundary (0.8, 1.2, 1.3, 0.5) so the loss is smooth here.
const X: ReferenceLossInputs = {
  newLogprobs: [
    [-0.3, -1.1, -0.7, -2.2, -0.05],
    [-1.5, -0.4, -0.9, -1.3, -0.6],
  ],
  oldLogprobs: [
    [null, -1.0, -0.95, -2.05, null],
    [null, -0.55, -0.6, -1.75, -0.62],
  ],
  advantages: [1.3, -0.7],
  weights: [0.8, 1.2],
  mask: [
    [0, 1, 1, 1, 1],
    [0, 1, 1, 1, 0],
  ],
};

function finiteDifference(x: ReferenceLossInputs, config: LossKnobs): number[][] {
  const h = 1e-6;
  const at = (r: number, t: number, d: number) => {
    const moved = x.newLogprobs.map((row, i) => row.map((v, j) => (i === r && j === t ? v + d : v)));
    return referenceLoss({ ...x, newLogprobs: moved, detachedNewLogprobs: x.newLogprobs }, config).loss;
  };
  return x.newLogprobs.map((row, r) => row.map((_, t) => (at(r, t, h) - at(r, t, -h)) / (2 * h)));
}

function jaxGrad(x: ReferenceLossInputs, config: LossKnobs): { value: number; grad: number[][] } {
  const f = (lp: np.Array, data: RlLossData) => {
    const { loss, metrics } = rlLoss(lp, data, config);
    for (const m of Object.values(metrics)) m.dispose();
    return loss;
  };
  const [value, grad] = valueAndGrad(f)(grid(x.newLogprobs), lossData(x));
  return { value: value.item(), grad: grad.js() as number[][] };
}

function expectClose(actual: number[][], expected: number[][]) {
  expected.forEach((row, r) =>
    row.forEach((e, t) => {
      expect(Math.abs(actual[r]![t]! - e), `d/dnew[${r}][${t}]: ${actual[r]![t]} vs ${e}`).toBeLessThan(2e-5 + 2e-5 * Math.abs(e));
    }),
  );
}

const CISPO = resolveRlConfig({});
const PPO = resolveRlConfig({ loss_fn: "ppo" });
const LEVELS = ["token", "sequence", "average", "geometric_average"] as const;
const CASES: { name: string; config: LossKnobs; inputs?: Partial<ReferenceLossInputs> }[] = [
  ...LEVELS.flatMap((level) => [
    { name: `cispo ${level}`, config: { ...CISPO, importanceSamplingLevel: level } },
    { name: `ppo ${level}`, config: { ...PPO, importanceSamplingLevel: level } },
    { name: `ppo ${level}, epsilon_high 0.3`, config: { ...PPO, importanceSamplingLevel: level, epsilonHigh: 0.3 } },
  ]),
  { name: "cispo clipping [0.8, 1.1]", config: { ...CISPO, epsilon: 0.2, epsilonHigh: 0.1 } },
  { name: "ppo mask_prob_ratio", config: { ...PPO, maskProbRatio: true } },
  { name: "ppo max_negative_advantage_importance_sampling_weight", config: { ...PPO, maxNegativeAdvantageImportanceSamplingWeight: 1.1 } },
  { name: "cispo kimi_k2_tau", config: { ...CISPO, kimiK2Tau: 0.7 } },
  { name: "ppo kimi_k2_tau", config: { ...PPO, kimiK2Tau: 0.7 } },
  { name: "ppo truncated_importance_sampling", config: { ...PPO, truncatedImportanceSampling: 1.1 } },
  {
    name: "cispo truncated IS with precalculated logprobs",
    config: { ...CISPO, truncatedImportanceSampling: 1.05 },
    inputs: { originalLogprobs: [[null, -1.1, -0.9, null, -0.2], [null, -0.5, -0.7, -1.7, -0.6]] },
  },
  {
    name: "ppo sequence with kl penalty (current_learner)",
    config: { ...PPO, importanceSamplingLevel: "sequence", klPenaltyCoef: 0.3 },
    inputs: { refLogprobs: [[0, -1.3, -0.6, -2.0, -0.2], [0, -0.3, -1.0, -1.5, -0.5]] },
  },
  {
    name: "cispo with kl penalty (sample)",
    config: { ...CISPO, klPenaltyCoef: 0.3, klPenaltySource: "sample" },
    inputs: { refLogprobs: [[0, -1.3, -0.6, -2.0, -0.2], [0, -0.3, -1.0, -1.5, -0.5]] },
  },
];

describe("RL loss gradient", () => {
  it.each(CASES)("$name", ({ config, inputs }) => {
    const x = { ...X, ...inputs };
    const { value, grad } = jaxGrad(x, config);
    expect(value).toBeCloseTo(referenceLoss(x, config).loss, 5);
    expectClose(grad, finiteDifference(x, config));
    // Untrained positions get no gradient.
    expect(Math.abs(grad[0]![0]!)).toBe(0);
    expect(Math.abs(grad[1]![4]!)).toBe(0);
  });

  it("traces under jit(valueAndGrad)", () => {
    const config = { ...PPO, importanceSamplingLevel: "geometric_average" as const, kimiK2Tau: 0.2 };
    const step = jit(valueAndGrad((lp: np.Array, data: RlLossData) => rlLoss(lp, data, config).loss));
    for (let i = 0; i < 2; i++) {
      const [value, grad] = step(grid(X.newLogprobs), lossData(X));
      expect(value.item()).toBeCloseTo(referenceLoss(X, config).loss, 5);
      expectClose(grad.js() as number[][], finiteDifference(X, config));
    }
    step.dispose();
  });
});
