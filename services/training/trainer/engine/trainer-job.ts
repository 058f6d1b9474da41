// A training job as a trainer runs it: prepared rows and optimizer steps (./prepare), the loss,
// the LoRA, the input adapters; and what comes back.

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

export interface RlLossSettings {
  lossFn: "cispo" | "ppo";
  epsilon: number;
  epsilonHigh: number;
  importanceSamplingLevel: "token" | "sequence" | "average" | "geometric_average";
  maxNegativeAdvantageImportanceSamplingWeight: number | null;
  maskProbRatio: boolean;
  kimiK2Tau: number | null;
  truncatedImportanceSampling: number | null;
  klPenaltyCoef: number;
  klPenaltySource: "current_learner" | "sample";
  precalculateLogprobs: boolean;
}

export interface LoraSettings {
  /** 0: the previous adapter's, else 8. */
  rank: number;
  /** 0: the previous adapter's, else 16. */
  alpha: number;
  /** Hugging Face module names; empty: every projection of the architecture. */
  targetModules: string[];
  seed: number;
}

/** An adapter's files: a llama.cpp LoRA GGUF (`adapter.gguf`) and/or PEFT's two files. */
export interface AdapterFileSet {
  gguf: Record<string, Buffer>;
  peft: Record<string, Buffer>;
}

export interface InputAdapter {
  format: "gguf" | "peft";
  files: Record<string, Uint8Array>;
}

export interface BaseModelRef {
  name: string;
  ggufPath: string;
  ggufSize: number;
  source: string;
  trainWeights: string;
}

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
}

export interface TrainerProgress {
  started(numSteps: number, info: { device: string; threads: number; loadSeconds: number }): void;
  step(step: number, metrics: Record<string, number>): void;
}

export interface TrainerOutcome {
  trained: boolean;
  adapter: AdapterFileSet;
}
