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
      logprobCalculationChunkSize: 1024,
      packedSequenceLength: null,
    };
    expect(resolveRlConfig(undefined)).toEqual(expected);
    // ART 0.5.23 sends these switches off by default: accepted.
    const artDefaults = { scale_learning_rate_by_reward_std_dev: false, plot_tensors: false, num_trajectories_learning_rate_multiplier_power: 0, logprob_calculation_chunk_size: 1024, truncated_importance_sampling: null };
    expect(resolveRlConfig(artDefaults)).toEqual(expected);
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

  it("refuses, naming the field, what ART 0.5.23's backends do not honour", () => {
    const refused = (sent: Record<string, unknown>, pattern: RegExp, quantizedBase?: boolean) => {
      expect(() => resolveRlConfig(sent as never, { quantizedBase })).toThrow(TrainingInputError);
      expect(() => resolveRlConfig(sent as never, { quantizedBase })).toThrow(pattern);
    };
    refused({ scale_learning_rate_by_reward_std_dev: true }, /^experimental_config\.scale_learning_rate_by_reward_std_dev: not supported/);
    refused({ plot_tensors: true }, /^experimental_config\.plot_tensors: not supported/);
    refused({ num_trajectories_learning_rate_multiplier_power: 0.5 }, /^experimental_config\.num_trajectories_learning_rate_multiplier_power: only 0 is supported, got 0\.5/);
    refused({ num_trajectories_learning_rate_multiplier_power: -1 }, /num_trajectories_learning_rate_multiplier_power/);
    // Truncated importance sampling weighs recomputed against sampler log-probs: it needs them kept.
    refused({ truncated_importance_sampling: 2 }, /^experimental_config\.truncated_importance_sampling needs precalculate_logprobs=true/);
    refused({ truncated_importance_sampling: 2, precalculate_logprobs: false }, /truncated_importance_sampling/, true);
    expect(resolveRlConfig({ truncated_importance_sampling: 2, precalculate_logprobs: true }).truncatedImportanceSampling).toBe(2);
    expect(resolveRlConfig({ truncated_importance_sampling: 2 }, { quantizedBase: true })).toMatchObject({ truncatedImportanceSampling: 2, precalculateLogprobs: true });
  });

  it("carries logprob_calculation_chunk_size to the trainer's logits chunking", () => {
    expect(resolveRlConfig({ logprob_calculation_chunk_size: 512 }).logprobCalculationChunkSize).toBe(512);
    expect(resolveRlConfig({ logprob_calculation_chunk_size: 512, packed_sequence_length: 1536 }).packedSequenceLength).toBe(1536);
    expect(() => resolveRlConfig({ logprob_calculation_chunk_size: 0 })).toThrow(/logprob_calculation_chunk_size must be a number >= 1/);
  });
});
