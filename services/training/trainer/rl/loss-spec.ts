// rlLoss as a LossSpec of the trainer's CausalLm (one cached object per setting, because the
// model caches its compiled step per spec object).
import type { LossSpec } from "../model/causal-lm.js";
import { rlLoss, type LossKnobs, type LossReduction, type RlLossData } from "./loss.js";

const specs = new Map<string, LossSpec<RlLossData>>();

/** Aux values: `entropy` (loss/entropy) and, with the KL penalty, `kl_policy_ref`. */
export function rlLossSpec(config: LossKnobs, reduction: LossReduction = "row-mean"): LossSpec<RlLossData> {
  const knobs: LossKnobs = {
    lossFn: config.lossFn,
    epsilon: config.epsilon,
    epsilonHigh: config.epsilonHigh,
    importanceSamplingLevel: config.importanceSamplingLevel,
    maxNegativeAdvantageImportanceSamplingWeight: config.maxNegativeAdvantageImportanceSamplingWeight,
    maskProbRatio: config.maskProbRatio,
    kimiK2Tau: config.kimiK2Tau,
    truncatedImportanceSampling: config.truncatedImportanceSampling,
    klPenaltyCoef: config.klPenaltyCoef,
    klPenaltySource: config.klPenaltySource,
  };
  const key = JSON.stringify([knobs, reduction]);
  let spec = specs.get(key);
  if (!spec) {
    spec = {
      entropy: true,
      fn: (out, data) => {
        const { loss, metrics } = rlLoss(out.logprobs, data, knobs, { reduction, entropy: out.entropy });
        return [loss, metrics];
      },
    };
    specs.set(key, spec);
  }
  return spec;
}
