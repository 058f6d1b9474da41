// The trainer as the worker sees it (services/training/worker). One call runs one training job
// (one optimizer pass over the job's data) and writes the new LoRA adapter; it runs in a worker
// thread so the server never blocks. Implemented by ./index.ts.
import type { JsonObject } from "@bufbuild/protobuf";

export interface TrainingJobInput {
  kind: "rl" | "sft";
  /** The base model's GGUF file. */
  baseModelPath: string;
  /** The model's latest adapter (LoRA GGUF) to continue from; null at step 0 (fresh LoRA). */
  previousAdapterPath: string | null;
  /** Where to write the new adapter (a new path per checkpoint). */
  adapterOutPath: string;
  /** RL: the trajectory groups exactly as the client sent them (ART JSON shapes). */
  groups?: JsonObject[];
  /** RL: experimental_config as sent (nulls mean defaults; unknown keys ignored). */
  experimentalConfig?: JsonObject;
  /** SFT: one row per conversation, `{"messages": [...], "tools"?: [...]}` (train.jsonl lines). */
  sftRows?: JsonObject[];
  /** SFT: `{"batch_size"?: int | "auto", "learning_rate"?: number | number[]}`. */
  sftConfig?: JsonObject;
  /** llama.cpp-independent compute threads hint for the trainer (wasm is single-threaded today). */
  seed?: number;
}

export interface TrainingProgress {
  /** Once, before the first optimizer step: how many optimizer steps the job will take. */
  started(numSequences: number): void;
  /** After every optimizer step: flat numeric metrics (spec names: loss, grad_norm, learning_rate, ...). */
  step(metrics: Record<string, number>): void;
}

export interface TrainingJobResult {
  /** The job's metrics averaged over its optimizer steps (they go on the checkpoint). */
  metrics: Record<string, number>;
  /** False when the job had nothing trainable: the previous adapter was carried over unchanged. */
  trained: boolean;
}

/** Thrown for bad input (the job fails with this message; nothing is retried). */
export class TrainingInputError extends Error {}
