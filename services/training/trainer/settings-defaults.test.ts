// The training settings' defaults come from the contract's `default_json` (else zero), and a
// resolved RL config goes to the trainer as the contract's RlLoss, field by field by name.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LoraConfigSchema, OptimizerConfigSchema, RlLossSchema } from "../../../gen/srl/trainer/v1/trainer_pb.js";
import { ExperimentalTrainingConfigSchema } from "../../../gen/srl/v1/training_pb.js";
import { jobRequests } from "./engine/wire.js";
import { LORA_SEED } from "./lora-config.js";
import { resolveLossFn, resolveRlConfig, rlLossMessage } from "./rl/config.js";
import { settingDefaults } from "./settings-defaults.js";

describe("settingDefaults", () => {
  it("reads default_json, else the zero value, as the fields' own types", () => {
    expect(settingDefaults(RlLossSchema)).toMatchObject({ lossFn: "cispo", importanceSamplingLevel: "token", klPenaltySource: "current_learner", epsilon: 0, kimiK2Tau: 0, maskProbRatio: false });
    expect(settingDefaults(LoraConfigSchema)).toMatchObject({ rank: 8, alpha: 16, seed: 3407n });
    expect(settingDefaults(OptimizerConfigSchema)).toMatchObject({ beta1: 0.9, beta2: 0.99, eps: 1e-8, maxGradNorm: 0 });
    expect(settingDefaults(ExperimentalTrainingConfigSchema)).toMatchObject({ learningRate: 5e-6, logprobCalculationChunkSize: 1024, scaleRewards: true, normalizeAdvantages: true, plotTensors: false });
    expect(LORA_SEED).toBe(3407);
  });
});

describe("rlLossMessage", () => {
  it("sends every RlLoss field of the resolved config, an off knob as 0", () => {
    const message = rlLossMessage(resolveRlConfig({ loss_fn: "ppo", kl_penalty_coef: 0.1, kimi_k2_tau: 0.3, max_negative_advantage_importance_sampling_weight: 0 }, { quantizedBase: true }));
    expect(message).toEqual(
      create(RlLossSchema, {
        lossFn: "ppo",
        epsilon: 0.2,
        epsilonHigh: 0.2,
        importanceSamplingLevel: "token",
        kimiK2Tau: 0.3,
        klPenaltyCoef: 0.1,
        klPenaltySource: "sample",
        precalculateLogprobs: true,
      }),
    );
    // It crosses the preparation thread (structured clone) and goes out as it is.
    const job = {
      jobId: "j",
      baseModel: { name: "m", ggufPath: "/m.gguf", ggufSize: 1, source: "/m.gguf", trainWeights: "" },
      lora: { rank: 0, alpha: 0, targetModules: [], seed: LORA_SEED + 1 },
      loss: { kind: "rl" as const, settings: structuredClone(message) },
      optimizer: { weightDecay: 0.1, maxGradNorm: 0.1, beta1: 0.9, beta2: 0.99, eps: 1e-8 },
      rows: [],
      steps: [],
      previousAdapter: null,
      referenceAdapter: null,
    };
    const spec = jobRequests(job).next().value!;
    expect(spec.case === "spec" && spec.value.loss).toEqual({ case: "rl", value: message });
    expect(spec.case === "spec" && spec.value.lora).toMatchObject({ rank: 0, alpha: 0, targetModules: [], seed: 3408n });
  });

  it("checks ppo against loss_fn once, for the API and the runner", () => {
    expect(resolveLossFn(null, null)).toBe("cispo");
    expect(resolveLossFn(true, undefined)).toBe("ppo");
    expect(resolveLossFn(false, "cispo")).toBe("cispo");
    expect(() => resolveLossFn(true, "cispo")).toThrow('experimental_config: ppo=true contradicts loss_fn="cispo"');
  });
});
