// experimental_config settings ART 0.5.23 sends that this service cannot honour the way ART's own
// backends do. Each is refused naming the field, never accepted and ignored: at job creation (400,
// ../../config-checks.ts) and again when the job is prepared (./config.ts), with the same words.
import { TrainingInputError } from "../api.js";

/** The settings as sent (or, for precalculate_logprobs, as resolved); null/undefined = unset. */
export interface RefusableRlSettings {
  scaleLearningRateByRewardStdDev?: boolean | null;
  plotTensors?: boolean | null;
  numTrajectoriesLearningRateMultiplierPower?: number | null;
  truncatedImportanceSampling?: number | null;
  /** Resolved where known; null/undefined: not known yet (the API without the base model's facts). */
  precalculateLogprobs?: boolean | null;
}

export function refuseUnsupportedRlSettings(settings: RefusableRlSettings): void {
  if (settings.scaleLearningRateByRewardStdDev === true) {
    // art/local/backend.py and the Megatron backend accept the flag and never read it (the
    // regression on train/reward_std_dev history was removed upstream in 2026-01).
    throw new TrainingInputError(
      "experimental_config.scale_learning_rate_by_reward_std_dev: not supported (ART 0.5.23's own backends accept it and do nothing with it); send false or null",
    );
  }
  if (settings.plotTensors === true) {
    // art/local/backend.py _get_packed_tensors writes plots into the client's local model directory.
    throw new TrainingInputError("experimental_config.plot_tensors: not supported (ART plots the packed tensors into a local model directory, which a remote service has not got); send false or null");
  }
  const power = settings.numTrajectoriesLearningRateMultiplierPower;
  if (power !== null && power !== undefined && power !== 0) {
    // art/unsloth/train.py compute_loss: lr × (|unique(group_ids)| − |unique(parent_ids)|) ** p.
    // With one trajectory history per optimizer step (0.5.23's Unsloth layout, and this
    // service's) both counts are equal, so the factor is 0 ** p: p > 0 trains at learning rate 0
    // and p < 0 fails; the Megatron backend ignores the field.
    throw new TrainingInputError(
      `experimental_config.num_trajectories_learning_rate_multiplier_power: only 0 is supported, got ${power} (ART 0.5.23 multiplies the learning rate by 0 ** p when each optimizer step holds one trajectory history, as here)`,
    );
  }
  const truncation = settings.truncatedImportanceSampling;
  if (truncation !== null && truncation !== undefined && truncation !== 0 && settings.precalculateLogprobs === false) {
    // art/loss.py: the truncation weight is exp(recomputed − sampler) and is skipped (a warning)
    // when the sampler's log-probs were not kept by precalculate_logprobs.
    throw new TrainingInputError("experimental_config.truncated_importance_sampling needs precalculate_logprobs=true (ART 0.5.23 skips it otherwise)");
  }
}
