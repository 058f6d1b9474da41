// experimental_config (as sent: snake_case, every field nullable, unknown keys ignored) -> the
// resolved RL settings with spec §4.4 defaults, read from the contract (../settings-defaults.ts)
// but for the clip range's, which depend on the loss function (clipDefaults). The combinations
// field rules cannot express are checked here once, for the API too (../../config-checks.ts), and
// so are the settings this service refuses (./refused-settings.ts). Bad values fail with
// TrainingInputError.
import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { RlLossSchema, type RlLoss } from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import { ExperimentalTrainingConfigSchema } from "../../../../gen/srl/v1/training_pb.js";
import { TrainingInputError } from "../api.js";
import { settingDefaults } from "../settings-defaults.js";
import { refuseUnsupportedRlSettings } from "./refused-settings.js";

const LOSS_FNS = ["cispo", "ppo"] as const;
const IMPORTANCE_SAMPLING_LEVELS = ["token", "sequence", "average", "geometric_average"] as const;
const KL_PENALTY_SOURCES = ["current_learner", "sample"] as const;
export type LossFnName = (typeof LOSS_FNS)[number];
export type ImportanceSamplingLevel = (typeof IMPORTANCE_SAMPLING_LEVELS)[number];
export type KlPenaltySource = (typeof KL_PENALTY_SOURCES)[number];

/** Defaults of the trainer's loss settings (trainer.proto RlLoss) and of the service's own (training.proto). */
const LOSS = settingDefaults(RlLossSchema);
const SERVICE = settingDefaults(ExperimentalTrainingConfigSchema);
const DEFAULT_LOSS_FN = member(LOSS_FNS, LOSS.lossFn, "loss_fn");

type RlLossFields = Omit<RlLoss, "$typeName" | "$unknown">;
/** `Fields` with the knobs `Off` as null where they are off (0 on the wire). */
type OffAsNull<Fields, Off extends keyof Fields> = Omit<Fields, Off> & { [K in Off]: Fields[K] | null };

/** RlLoss's fields by their contract names (narrowed), then what only this service uses. */
export interface RlConfig extends OffAsNull<RlLossFields, "maxNegativeAdvantageImportanceSamplingWeight" | "kimiK2Tau" | "truncatedImportanceSampling"> {
  learningRate: number;
  lossFn: LossFnName;
  /** Divide group-relative advantages by the group's population std (+1e-6). */
  scaleRewards: boolean;
  advantageBalance: number;
  importanceSamplingLevel: ImportanceSamplingLevel;
  /** ρ ← min(ρ, c) on every token (null = off). */
  maxNegativeAdvantageImportanceSamplingWeight: number | null;
  /** A ← A − τ·sg(δ) (null = off); `vendor_k2_tau` is accepted as an alias. */
  kimiK2Tau: number | null;
  allowTrainingWithoutLogprobs: boolean;
  /** ℓ ← ℓ·sg(min(q, U)) (null = off). */
  truncatedImportanceSampling: number | null;
  klPenaltySource: KlPenaltySource;
  klPenaltyReferenceStep: number | null;
  klPenaltyStepLag: number | null;
  /** Positions whose log-softmax the trainer computes at once (ART's logits chunking). */
  logprobCalculationChunkSize: number;
  packedSequenceLength: number | null;
}

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
  const lossFn = resolveLossFn(c.bool("ppo"), c.oneOf("loss_fn", LOSS_FNS));
  const { epsilon, epsilonHigh } = clipDefaults(lossFn, c.number("epsilon", { min: 0 }), c.number("epsilon_high", { min: 0 }));

  const kimi = c.number("kimi_k2_tau");
  const vendor = c.number("vendor_k2_tau");
  if (kimi !== null && vendor !== null && kimi !== vendor) throw new TrainingInputError(`experimental_config: kimi_k2_tau=${kimi} and vendor_k2_tau=${vendor} disagree`);

  const referenceStep = c.integer("kl_penalty_reference_step", { min: 0 });
  const stepLag = c.integer("kl_penalty_step_lag", { min: 1 });
  checkKlReference(referenceStep, stepLag);
  const klCoef = c.number("kl_penalty_coef", { min: 0 }) ?? LOSS.klPenaltyCoef;
  const chunk = c.integer("logprob_calculation_chunk_size", { min: 1 }) ?? SERVICE.logprobCalculationChunkSize;
  const packed = c.integer("packed_sequence_length", { min: 1 });
  if (packed !== null && packed % chunk !== 0) throw new TrainingInputError(`experimental_config.packed_sequence_length (${packed}) must be divisible by logprob_calculation_chunk_size (${chunk})`);

  const precalculateLogprobs = c.bool("precalculate_logprobs") ?? context.quantizedBase ?? LOSS.precalculateLogprobs;
  refuseUnsupportedRlSettings({
    scaleLearningRateByRewardStdDev: c.bool("scale_learning_rate_by_reward_std_dev"),
    plotTensors: c.bool("plot_tensors"),
    numTrajectoriesLearningRateMultiplierPower: c.number("num_trajectories_learning_rate_multiplier_power"),
    truncatedImportanceSampling: c.number("truncated_importance_sampling"),
    precalculateLogprobs,
  });

  return {
    learningRate: c.number("learning_rate", { min: 0 }) ?? SERVICE.learningRate,
    lossFn,
    epsilon,
    epsilonHigh,
    // normalize_advantages is the older name; false on either turns the std division off.
    scaleRewards: (c.bool("scale_rewards") ?? SERVICE.scaleRewards) && (c.bool("normalize_advantages") ?? SERVICE.normalizeAdvantages),
    advantageBalance: c.number("advantage_balance", { min: -1, max: 1 }) ?? SERVICE.advantageBalance,
    importanceSamplingLevel: c.oneOf("importance_sampling_level", IMPORTANCE_SAMPLING_LEVELS) ?? member(IMPORTANCE_SAMPLING_LEVELS, LOSS.importanceSamplingLevel, "importance_sampling_level"),
    maxNegativeAdvantageImportanceSamplingWeight: nonZero(c.number("max_negative_advantage_importance_sampling_weight")),
    maskProbRatio: c.bool("mask_prob_ratio") ?? LOSS.maskProbRatio,
    kimiK2Tau: nonZero(kimi ?? vendor),
    precalculateLogprobs,
    allowTrainingWithoutLogprobs: c.bool("allow_training_without_logprobs") ?? SERVICE.allowTrainingWithoutLogprobs,
    truncatedImportanceSampling: nonZero(c.number("truncated_importance_sampling")),
    klPenaltyCoef: klCoef,
    // Serverless: an unset source with a KL penalty means "sample" (§4.3); else the contract's default.
    klPenaltySource: c.oneOf("kl_penalty_source", KL_PENALTY_SOURCES) ?? (klCoef > 0 ? "sample" : member(KL_PENALTY_SOURCES, LOSS.klPenaltySource, "kl_penalty_source")),
    klPenaltyReferenceStep: referenceStep,
    klPenaltyStepLag: stepLag,
    logprobCalculationChunkSize: chunk,
    packedSequenceLength: packed,
  };
}

/**
 * The loss function, from `loss_fn` or the older `ppo` switch (neither: the contract's default).
 * The one check of their combination, for the API (400, ../../config-checks.ts) and the runner.
 */
export function resolveLossFn(ppo: boolean | null | undefined, lossFn: string | null | undefined): LossFnName {
  if (ppo != null && lossFn != null && ppo !== (lossFn === "ppo")) {
    throw new TrainingInputError(`experimental_config: ppo=${ppo} contradicts loss_fn="${lossFn}"`);
  }
  return lossFn != null ? member(LOSS_FNS, lossFn, "loss_fn") : ppo ? "ppo" : DEFAULT_LOSS_FN;
}

/** The KL reference is a fixed step or a lag behind the current one, not both (API and runner). */
export function checkKlReference(referenceStep: number | null | undefined, stepLag: number | null | undefined): void {
  if (referenceStep != null && stepLag != null) throw new TrainingInputError("experimental_config: kl_penalty_reference_step and kl_penalty_step_lag exclude each other");
}

/**
 * Spec §4.4's clip range, the one default that depends on another setting (so it has no single
 * default in the contract; the trainer receives it resolved): an unset epsilon is 0.2 for PPO and
 * 1.0 for CISPO, an unset epsilon_high is epsilon for PPO and 4.0 for CISPO. Clients send every
 * unset knob as null, so §4.2's "explicit epsilon_high = null means = epsilon" (a local-dict
 * nuance) is not applied.
 */
export function clipDefaults(lossFn: LossFnName, epsilon: number | null, epsilonHigh: number | null): { epsilon: number; epsilonHigh: number } {
  const low = epsilon ?? (lossFn === "ppo" ? 0.2 : 1.0);
  return { epsilon: low, epsilonHigh: epsilonHigh ?? (lossFn === "ppo" ? low : 4.0) };
}

/** The trainer's RlLoss for a resolved config: each of its fields by its own name (an off knob is 0). */
export function rlLossMessage(config: RlConfig): RlLoss {
  const message = create(RlLossSchema);
  const fields = reflect(RlLossSchema, message);
  for (const field of fields.fields) {
    const value = config[field.localName as keyof RlLossFields];
    if (value !== null) fields.set(field, value);
  }
  return message;
}

/** A contract default (or a value already checked) as one of the allowed literals. */
function member<const T extends readonly string[]>(values: T, value: string, key: string): T[number] {
  if (!values.includes(value)) throw new Error(`${key}: "${value}" is not one of ${values.join(", ")}`);
  return value as T[number];
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
