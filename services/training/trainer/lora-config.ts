// A job's `lora_config` (experimental_config.lora_config for RL, config.lora_config for SFT):
// `{rank?, alpha?, target_modules?}`; unset fields keep the model's adapter's settings (or, at the
// first job, the defaults of the trainer contract's LoraConfig, which the trainer applies: spec
// §5.1, on every projection). A later job cannot change them (the trainer refuses a mismatch with
// the previous adapter).
import type { JsonValue } from "@bufbuild/protobuf";
import { LoraConfigSchema, type LoraConfig } from "../../../gen/srl/trainer/v1/trainer_pb.js";
import { TrainingInputError } from "./api.js";
import { settingDefaults } from "./settings-defaults.js";

/** The trainer contract's LoRA settings (rank, alpha: 0 = the previous adapter's, else the contract's default), with the seed as a number. */
export type LoraSettings = Omit<LoraConfig, "$typeName" | "$unknown" | "seed"> & { seed: number };

/** Spec §5.1: PEFT's random_state (the contract's default seed); the job's seed is mixed in so retries repeat exactly. */
export const LORA_SEED = Number(settingDefaults(LoraConfigSchema).seed);

export function loraSettings(sent: JsonValue | undefined, seed: number | undefined): LoraSettings {
  const base: LoraSettings = { rank: 0, alpha: 0, targetModules: [], seed: LORA_SEED + (seed ?? 0) };
  if (sent === undefined || sent === null) return base;
  if (typeof sent !== "object" || Array.isArray(sent)) throw new TrainingInputError("lora_config must be an object {rank?, alpha?, target_modules?}");
  const { rank, alpha, target_modules: targets, ...rest } = sent;
  const unknown = Object.keys(rest).filter((k) => rest[k] !== null && k !== "dropout" && k !== "init_weights");
  if (unknown.length > 0) throw new TrainingInputError(`lora_config: unknown keys ${unknown.join(", ")} (rank, alpha, target_modules)`);
  if (rest.dropout !== undefined && rest.dropout !== null && rest.dropout !== 0) throw new TrainingInputError("lora_config.dropout: only 0 is supported");
  if (rank !== undefined && rank !== null) {
    if (typeof rank !== "number" || !Number.isInteger(rank) || rank < 1 || rank > 1024) throw new TrainingInputError(`lora_config.rank must be an integer from 1 to 1024, got ${JSON.stringify(rank)}`);
    base.rank = rank;
  }
  if (alpha !== undefined && alpha !== null) {
    if (typeof alpha !== "number" || !Number.isFinite(alpha) || alpha <= 0) throw new TrainingInputError(`lora_config.alpha must be a number > 0, got ${JSON.stringify(alpha)}`);
    base.alpha = alpha;
  }
  if (targets !== undefined && targets !== null) {
    if (!Array.isArray(targets) || targets.length === 0 || !targets.every((t): t is string => typeof t === "string" && /^[A-Za-z0-9_]+$/.test(t))) {
      throw new TrainingInputError('lora_config.target_modules must be a non-empty list of module names such as "q_proj"');
    }
    base.targetModules = [...new Set(targets)];
  }
  return base;
}
