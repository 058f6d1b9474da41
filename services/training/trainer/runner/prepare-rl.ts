// An RL job (spec §11.1, Unsloth layout): tokenize the groups, plan advantages / weights / drops,
// then one optimizer step per kept row (one tokenized history each, shuffled): ART's loss,
// clip 0.1, AdamW wd 0.1, lr = learning_rate × §3.4 factor. Nothing trainable -> skip.
import { Prng } from "../../../core/prng.js";
import type { TrainingJobInput } from "../api.js";
import { loraSettings } from "../lora-config.js";
import { planRlRows } from "../rl/advantages.js";
import { resolveRlConfig, rlLossMessage } from "../rl/config.js";
import type { ChatTokenizer } from "../tokenize/chat-tokenizer.js";
import { tokenizeTrajectoryGroups } from "../tokenize/rl-rows.js";
import { groupRewards, parseTrajectoryGroups } from "../tokenize/trajectories.js";
import { ADAM, type PreparedJob } from "./prepared-job.js";

/** Spec §5.2 (RL). */
export const RL_WEIGHT_DECAY = 0.1;
export const RL_MAX_GRAD_NORM = 0.1;

export interface RlDefaults {
  /** The base model is quantized: the sampler's log-probs differ from the trainer's (see rl/config.ts). */
  quantizedBase: boolean;
}

export function prepareRl(input: TrainingJobInput, tokenizer: ChatTokenizer, defaults: RlDefaults): PreparedJob {
  const config = resolveRlConfig(input.experimentalConfig, { quantizedBase: defaults.quantizedBase });
  const groups = input.groups ?? [];
  const trainedModel = input.trainedModel ?? null;
  const rewards = groupRewards(parseTrajectoryGroups(groups, trainedModel));
  const rows = tokenizeTrajectoryGroups(tokenizer, groups, { allowTrainingWithoutLogprobs: config.allowTrainingWithoutLogprobs, scaleRewards: config.scaleRewards, trainedModel });
  const plan = planRlRows(rows, rewards, config);
  const data = {
    num_groups_submitted: groups.length,
    num_groups_trainable: plan.counts.groupsTrainable,
    num_trajectories: groups.reduce((n, g) => n + listLength(g["trajectories"]) + listLength(g["exceptions"]), 0),
  };
  const lora = loraSettings(input.experimentalConfig?.lora_config, input.seed);
  const base = { kind: "rl" as const, loss: { kind: "rl" as const, settings: rlLossMessage(config) }, optimizer: { ...ADAM, weightDecay: RL_WEIGHT_DECAY, maxGradNorm: RL_MAX_GRAD_NORM }, lora, reportedLearningRate: config.learningRate, logitsChunkTokens: config.logprobCalculationChunkSize };
  if (plan.skip) {
    return { ...base, rows: [], steps: [], skip: true, stepMetrics: {}, jobMetrics: { ...data, num_trainable_tokens: 0, num_gradient_steps: 0 } };
  }
  // ART permutes the rows; seeded here so a job can be replayed.
  const order = shuffle(
    plan.rows.flatMap((p, i) => (p.kept ? [i] : [])),
    new Prng(input.seed ?? Math.floor(Math.random() * 2 ** 32), "rl-rows"),
  );
  const stepData = { ...data, num_trainable_tokens: plan.counts.trainableTokens, num_gradient_steps: order.length };
  return {
    ...base,
    rows: order.map((i) => ({
      tokens: rows[i]!.tokens,
      trained: rows[i]!.assistantMask,
      samplerLogprobs: rows[i]!.oldLogprobs,
      advantage: plan.rows[i]!.advantage,
      weight: plan.rows[i]!.weight,
    })),
    steps: order.map((_, k) => ({ rows: [k], learningRate: config.learningRate })),
    skip: false,
    stepMetrics: stepData,
    jobMetrics: stepData,
  };
}

function listLength(value: unknown): number {
  return Array.isArray(value) ? value.length : 0;
}

function shuffle<T>(items: T[], rng: Prng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

