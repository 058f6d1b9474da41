// experimental_config (as sent: snake_case, every field nullable, unknown keys ignored) -> the
// resolved RL settings with spec §4.4 defaults. Bad values fail with TrainingInputError.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";

export type LossFnName = "cispo" | "ppo";
export type ImportanceSamplingLevel = "token" | "sequence" | "average" | "geometric_average";
export type KlPenaltySource = "current_learner" | "sample";

export interface RlConfig {
  learningRate: number;
  lossFn: LossFnName;
  /** Lower clip: the ratio range is [1 - epsilon, 1 + epsilonHigh]. */
  epsilon: number;
  epsilonHigh: number;
  /** Divide group-relative advantages by the group's population std (+1e-6). */
  scaleRewards: boolean;
  advantageBalance: number;
  importanceSamplingLevel: ImportanceSamplingLevel;
  /** ρ ← min(ρ, c) on every token (null or 0 = off). */
  maxNegativeAdvantageImportanceSamplingWeight: number | null;
  maskProbRatio: boolean;
  /** A ← A − τ·sg(δ) (null or 0 = off); `vendor_k2_tau` is accepted as an alias. */
  kimiK2Tau: number | null;
  precalculateLogprobs: boolean;
  allowTrainingWithoutLogprobs: boolean;
  /** ℓ ← ℓ·sg(min(q, U)) (null or 0 = off). */
  truncatedImportanceSampling: number | null;
  klPenaltyCoef: number;
  klPenaltySource: KlPenaltySource;
  klPenaltyReferenceStep: number | null;
  klPenaltyStepLag: number | null;
  numTrajectoriesLearningRateMultiplierPower: number;
  logprobCalculationChunkSize: number;
  packedSequenceLength: number | null;
  /** Accepted and ignored (a local no-op in ART since 2026-01). */
  scaleLearningRateByRewardStdDev: boolean;
  plotTensors: boolean;
}

export const DEFAULT_RL_LEARNING_RATE = 5e-6;

/** What the service knows of the job beyond its config. */
export interface RlContext {
  /**
   * The base model is quantized, so the engine samples with quantized activations and the trainer
   * (on dequantized weights) disagrees with the sampler's log-probs by ~0.07 on average and up to
   * ~0.3 (SmolLM2 Q4_1). `precalculate_logprobs` then defaults to true: the ratio is measured
   * against the trainer's own pre-update policy, and the sampler's values only feed the gap metrics
   * (and truncated importance sampling, when set). An explicit value is honoured.
   */
  quantizedBase?: boolean;
}

export function resolveRlConfig(sent: JsonObject | null | undefined, context: RlContext = {}): RlConfig {
  const c = new Reader(sent ?? {});
  const ppo = c.bool("ppo");
  const lossFnSent = c.oneOf("loss_fn", ["cispo", "ppo"] as const);
  if (ppo !== null && lossFnSent !== null && ppo !== (lossFnSent === "ppo")) {
    throw new TrainingInputError(`experimental_config: ppo=${ppo} contradicts loss_fn="${lossFnSent}"`);
  }
  const lossFn: LossFnName = lossFnSent ?? (ppo ? "ppo" : "cispo");
  // §4.4: null -> 1.0 / 4.0 (CISPO) or 0.2 / = epsilon (PPO). Clients send every unset knob as null,
  // so §4.2's "explicit epsilon_high = null means = epsilon" (a local-dict nuance) is not applied.
  const epsilon = c.number("epsilon", { min: 0 }) ?? (lossFn === "ppo" ? 0.2 : 1.0);
  const epsilonHigh = c.number("epsilon_high", { min: 0 }) ?? (lossFn === "ppo" ? epsilon : 4.0);

  const kimi = c.number("kimi_k2_tau");
  const vendor = c.number("vendor_k2_tau");
  if (kimi !== null && vendor !== null && kimi !== vendor) throw new TrainingInputError(`experimental_config: kimi_k2_tau=${kimi} and vendor_k2_tau=${vendor} disagree`);

  const referenceStep = c.integer("kl_penalty_reference_step", { min: 0 });
  const stepLag = c.integer("kl_penalty_step_lag", { min: 1 });
  if (referenceStep !== null && stepLag !== null) throw new TrainingInputError("experimental_config: kl_penalty_reference_step and kl_penalty_step_lag exclude each other");
  const klCoef = c.number("kl_penalty_coef", { min: 0 }) ?? 0;
  const chunk = c.integer("logprob_calculation_chunk_size", { min: 1 }) ?? 1024;
  const packed = c.integer("packed_sequence_length", { min: 1 });
  if (packed !== null && packed % chunk !== 0) throw new TrainingInputError(`experimental_config.packed_sequence_length (${packed}) must be divisible by logprob_calculation_chunk_size (${chunk})`);

  return {
    learningRate: c.number("learning_rate", { min: 0 }) ?? DEFAULT_RL_LEARNING_RATE,
    lossFn,
    epsilon,
    epsilonHigh,
    // normalize_advantages is the older name; false on either turns the std division off.
    scaleRewards: (c.bool("scale_rewards") ?? true) && (c.bool("normalize_advantages") ?? true),
    advantageBalance: c.number("advantage_balance", { min: -1, max: 1 }) ?? 0,
    importanceSamplingLevel: c.oneOf("importance_sampling_level", ["token", "sequence", "average", "geometric_average"] as const) ?? "token",
    maxNegativeAdvantageImportanceSamplingWeight: nonZero(c.number("max_negative_advantage_importance_sampling_weight")),
    maskProbRatio: c.bool("mask_prob_ratio") ?? false,
    kimiK2Tau: nonZero(kimi ?? vendor),
    precalculateLogprobs: c.bool("precalculate_logprobs") ?? context.quantizedBase ?? false,
    allowTrainingWithoutLogprobs: c.bool("allow_training_without_logprobs") ?? false,
    truncatedImportanceSampling: nonZero(c.number("truncated_importance_sampling")),
    klPenaltyCoef: klCoef,
    // Serverless: an unset source with a KL penalty means "sample" (§4.3); else current_learner.
    klPenaltySource: c.oneOf("kl_penalty_source", ["current_learner", "sample"] as const) ?? (klCoef > 0 ? "sample" : "current_learner"),
    klPenaltyReferenceStep: referenceStep,
    klPenaltyStepLag: stepLag,
    numTrajectoriesLearningRateMultiplierPower: c.number("num_trajectories_learning_rate_multiplier_power") ?? 0,
    logprobCalculationChunkSize: chunk,
    packedSequenceLength: packed,
    scaleLearningRateByRewardStdDev: c.bool("scale_learning_rate_by_reward_std_dev") ?? false,
    plotTensors: c.bool("plot_tensors") ?? false,
  };
}

/** Knobs that ART switches on with "if value:" — 0 means off. */
function nonZero(value: number | null): number | null {
  return value === null || value === 0 ? null : value;
}

class Reader {
  constructor(private readonly sent: JsonObject) {}

  private get(key: string): JsonValue | undefined {
    const value = this.sent[key];
    return value === null ? undefined : value;
  }

  private fail(key: string, expected: string): never {
    throw new TrainingInputError(`experimental_config.${key} must be ${expected}, got ${JSON.stringify(this.sent[key])}`);
  }

  number(key: string, range: { min?: number; max?: number } = {}): number | null {
    const value = this.get(key);
    if (value === undefined) return null;
    const bounds = [range.min !== undefined ? `>= ${range.min}` : "", range.max !== undefined ? `<= ${range.max}` : ""].filter(Boolean).join(" and ");
    const expected = bounds ? `a number ${bounds}` : "a finite number";
    if (typeof value !== "number" || !Number.isFinite(value)) this.fail(key, expected);
    if ((range.min !== undefined && value < range.min) || (range.max !== undefined && value > range.max)) this.fail(key, expected);
    return value;
  }

  integer(key: string, range: { min?: number } = {}): number | null {
    const value = this.number(key, range);
    if (value !== null && !Number.isInteger(value)) this.fail(key, "an integer");
    return value;
  }

  bool(key: string): boolean | null {
    const value = this.get(key);
    if (value === undefined) return null;
    if (typeof value !== "boolean") this.fail(key, "true or false");
    return value;
  }

  string(key: string): string | null {
    const value = this.get(key);
    if (value === undefined) return null;
    if (typeof value !== "string") this.fail(key, "a string");
    return value;
  }

  oneOf<const T extends readonly string[]>(key: string, values: T): T[number] | null {
    const value = this.get(key);
    if (value === undefined) return null;
    if (typeof value !== "string" || !values.includes(value)) this.fail(key, `one of ${values.map((v) => `"${v}"`).join(", ")}`);
    return value as T[number];
  }
}
