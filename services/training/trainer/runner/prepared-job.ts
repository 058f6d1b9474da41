// A job ready for a trainer: what ./prepare-rl.ts and ./prepare-sft.ts make of the client's data,
// and the few numbers the worker adds to what the trainer reports.
import type { PreparedRow, PreparedStep, TrainerJob } from "../engine/trainer-job.js";

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
}

/** Spec §5.2: AdamW betas (0.9, 0.99), eps 1e-8. */
export const ADAM = { beta1: 0.9, beta2: 0.99, eps: 1e-8 } as const;
