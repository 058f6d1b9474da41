import { describe, expect, it } from "vitest";
import { TrainingInputError } from "../api.js";
import { resolveRlConfig } from "./config.js";

describe("resolveRlConfig", () => {
  it("applies the §4.4 defaults for an empty or all-null config", () => {
    const expected = {
      learningRate: 5e-6,
      lossFn: "cispo",
      epsilon: 1,
      epsilonHigh: 4,
      scaleRewards: true,
      advantageBalance: 0,
      importanceSamplingLevel: "token",
      maxNegativeAdvantageImportanceSamplingWeight: null,
      maskProbRatio: false,
      kimiK2Tau: null,
      precalculateLogprobs: false,
      allowTrainingWithoutLogprobs: false,
      truncatedImportanceSampling: null,
      klPenaltyCoef: 0,
      klPenaltySource: "current_learner",
      klPenaltyReferenceStep: null,
      klPenaltyStepLag: null,
      numTrajectoriesLearningRateMultiplierPower: 0,
      logprobCalculationChunkSize: 1024,
      packedSequenceLength: null,
      scaleLearningRateByRewardStdDev: false,
      plotTensors: false,
    };
    expect(resolveRlConfig(undefined)).toEqual(expected);
    const nulls = Object.fromEntries(["learning_rate", "loss_fn", "ppo", "epsilon", "epsilon_high", "scale_rewards", "normalize_advantages", "importance_sampling_level", "kimi_k2_tau", "kl_penalty_source"].map((k) => [k, null]));
    expect(resolveRlConfig({ ...nulls, some_future_key: { x: 1 } })).toEqual(expected);
  });

  it("resolves the loss function and its clip defaults", () => {
    expect(resolveRlConfig({ loss_fn: "ppo" })).toMatchObject({ lossFn: "ppo", epsilon: 0.2, epsilonHigh: 0.2 });
    expect(resolveRlConfig({ ppo: true })).toMatchObject({ lossFn: "ppo", epsilon: 0.2, epsilonHigh: 0.2 });
    expect(resolveRlConfig({ ppo: true, epsilon: 0.1 })).toMatchObject({ epsilon: 0.1, epsilonHigh: 0.1 });
    expect(resolveRlConfig({ ppo: false, loss_fn: "cispo", epsilon: 0.5 })).toMatchObject({ lossFn: "cispo", epsilon: 0.5, epsilonHigh: 4 });
    expect(resolveRlConfig({ loss_fn: "ppo", epsilon_high: 0.28 })).toMatchObject({ epsilon: 0.2, epsilonHigh: 0.28 });
    expect(() => resolveRlConfig({ ppo: true, loss_fn: "cispo" })).toThrow(/contradicts/);
    expect(() => resolveRlConfig({ loss_fn: "grpo" })).toThrow(/loss_fn must be one of "cispo", "ppo"/);
  });

  it("maps aliases and switches", () => {
    expect(resolveRlConfig({ vendor_k2_tau: 0.3 }).kimiK2Tau).toBe(0.3);
    expect(resolveRlConfig({ kimi_k2_tau: 0.3, vendor_k2_tau: 0.3 }).kimiK2Tau).toBe(0.3);
    expect(() => resolveRlConfig({ kimi_k2_tau: 0.3, vendor_k2_tau: 0.4 })).toThrow(/disagree/);
    expect(resolveRlConfig({ kimi_k2_tau: 0, truncated_importance_sampling: 0, max_negative_advantage_importance_sampling_weight: 0 })).toMatchObject({
      kimiK2Tau: null,
      truncatedImportanceSampling: null,
      maxNegativeAdvantageImportanceSamplingWeight: null,
    });
    expect(resolveRlConfig({ normalize_advantages: false }).scaleRewards).toBe(false);
    expect(resolveRlConfig({ scale_rewards: false, normalize_advantages: true }).scaleRewards).toBe(false);
    expect(resolveRlConfig({ kl_penalty_coef: 0.1 }).klPenaltySource).toBe("sample");
    expect(resolveRlConfig({ kl_penalty_coef: 0.1, kl_penalty_source: "current_learner" }).klPenaltySource).toBe("current_learner");
    expect(resolveRlConfig({ importance_sampling_level: "geometric_average", mask_prob_ratio: true, learning_rate: 1e-5 })).toMatchObject({
      importanceSamplingLevel: "geometric_average",
      maskProbRatio: true,
      learningRate: 1e-5,
    });
  });

  it("rejects bad values with the field name", () => {
    const bad = (sent: Record<string, unknown>, pattern: RegExp) => {
      expect(() => resolveRlConfig(sent as never)).toThrow(TrainingInputError);
      expect(() => resolveRlConfig(sent as never)).toThrow(pattern);
    };
    bad({ importance_sampling_level: "tokens" }, /importance_sampling_level must be one of/);
    bad({ learning_rate: -1 }, /learning_rate must be a number >= 0/);
    bad({ learning_rate: "1e-5" }, /learning_rate/);
    bad({ advantage_balance: 1.5 }, /advantage_balance must be a number >= -1 and <= 1/);
    bad({ mask_prob_ratio: "yes" }, /mask_prob_ratio must be true or false/);
    bad({ kl_penalty_reference_step: 2, kl_penalty_step_lag: 1 }, /exclude each other/);
    bad({ kl_penalty_step_lag: 0 }, /kl_penalty_step_lag/);
    bad({ packed_sequence_length: 1000 }, /divisible by logprob_calculation_chunk_size/);
  });
});
