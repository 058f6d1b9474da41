// A job ready for a trainer: what ./prepare-rl.ts and ./prepare-sft.ts make of the client's data,
// and the few numbers the worker adds to what the trainer reports.
import { OptimizerConfigSchema } from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import type { PreparedRow, PreparedStep, TrainerJob } from "../engine/trainer-job.js";
import { settingDefaults } from "../settings-defaults.js";

export interface PreparedJob {
  kind: "rl" | "sft";
  rows: PreparedRow[];
  steps: PreparedStep[];
  loss: TrainerJob["loss"];
  optimizer: TrainerJob["optimizer"];
  lora: TrainerJob["lora"];
  /** Nothing to train: no trainer call, the previous adapter carries over. */
  skip: boolean;
  /** Added to every step's metrics (RL: the call-wide counts). */
  stepMetrics: Record<string, number>;
  /** RL reports the configured learning rate per step, not the §3.4-multiplied one. */
  reportedLearningRate: number | null;
  /** Added to the job's averaged metrics. */
  jobMetrics: Record<string, number>;
  /** RL: logprob_calculation_chunk_size, for the trainer's logits chunking. */
  logitsChunkTokens?: number;
}

const OPTIMIZER = settingDefaults(OptimizerConfigSchema);
/** Spec §5.2's AdamW betas and eps: the trainer contract's OptimizerConfig defaults. */
export const ADAM = { beta1: OPTIMIZER.beta1, beta2: OPTIMIZER.beta2, eps: OPTIMIZER.eps } as const;
