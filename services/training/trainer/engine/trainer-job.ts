// A training job as a trainer runs it: prepared rows and optimizer steps (./prepare), the loss,
// the LoRA, the input adapters; and what comes back.
import type { RlLoss } from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import type { AdapterFileSet, BaseModelRef, InputAdapter, TrainerStartInfo } from "../api.js";
import type { LoraSettings } from "../lora-config.js";

export interface PreparedRow {
  tokens: number[];
  /** Per token: true where the token is trained. */
  trained: boolean[];
  /** RL, per token: the sampler's log-prob, null where absent. */
  samplerLogprobs?: (number | null)[];
  advantage: number;
  weight: number;
}

export interface PreparedStep {
  /** Indexes into the job's rows. */
  rows: number[];
  learningRate: number;
}

/** The RL loss settings, resolved (../rl/config.ts): the trainer contract's message as it is sent. */
export type RlLossSettings = RlLoss;

export interface TrainerJob {
  jobId: string;
  baseModel: BaseModelRef;
  lora: LoraSettings;
  loss: { kind: "sft" } | { kind: "rl"; settings: RlLossSettings };
  optimizer: { weightDecay: number; maxGradNorm: number; beta1: number; beta2: number; eps: number };
  rows: PreparedRow[];
  steps: PreparedStep[];
  previousAdapter: InputAdapter | null;
  referenceAdapter: InputAdapter | null;
  /** RL: ART's logprob_calculation_chunk_size, the positions whose log-softmax is computed at once (absent: the trainer's default). */
  logitsChunkTokens?: number;
}

export interface TrainerProgress {
  started(numSteps: number, info: TrainerStartInfo): void;
  step(step: number, metrics: Record<string, number>): void;
}

export interface TrainerOutcome {
  trained: boolean;
  adapter: AdapterFileSet;
}
