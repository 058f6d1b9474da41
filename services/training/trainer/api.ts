// The trainer as the worker sees it (services/training/worker): one call runs one training job
// (one pass over the job's data) and returns the new adapter. Implemented by ./runner/run-training-job.ts: the job
// is prepared here (tokenization with the engine's own tokenizer and template, advantages, the
// plan of optimizer steps) and trained by a trainer process (./engine, PyTorch).
import { stat } from "node:fs/promises";
import type { JsonObject } from "@bufbuild/protobuf";

export interface TrainingJobInput {
  jobId: string;
  kind: "rl" | "sft";
  baseModel: BaseModelRef;
  /** The model's latest adapter to continue from; null at step 0 (a fresh LoRA). */
  previousAdapter: InputAdapter | null;
  /** RL with a KL penalty: the reference policy's adapter; null: the base model. */
  referenceAdapter?: InputAdapter | null;
  /** RL: the trajectory groups exactly as the client sent them (ART JSON shapes). */
  groups?: JsonObject[];
  /** RL: the model being trained; captured exchanges of other models (a judge's) are left out. */
  trainedModel?: { entity: string; project: string; name: string };
  /** RL: experimental_config as sent (nulls mean defaults; unknown keys ignored). */
  experimentalConfig?: JsonObject;
  /** SFT: one row per conversation, `{"messages": [...], "tools"?: [...]}` (train.jsonl lines). */
  sftRows?: JsonObject[];
  /** SFT: `{"batch_size"?: int | "auto", "learning_rate"?: number | number[], "assistant_turns"?: "all" | "last", "lora_config"?: {...}}`. */
  sftConfig?: JsonObject;
  /** Seeds the row order and a fresh LoRA's initialisation: the same data trains the same way. */
  seed?: number;
}

/** What the trainer said when the job started: its device and the settings it chose there. */
export interface TrainerStartInfo {
  device: string;
  threads: number;
  loadSeconds: number;
  microBatchTokens: number;
  /** "on", "off" or "auto" (only a pack past the memory budget is checkpointed). */
  gradientCheckpointing: string;
  activationBudgetBytes: number;
  activationBytesPerToken: number;
  /** The choice in words, with the figures it came from. */
  resources: string;
}

export interface TrainingProgress {
  /** Once, before the first optimizer step: how many optimizer steps the job will take, and (from
   * the trainer) its device and the memory settings it chose there. */
  started(numSequences: number, trainer?: TrainerStartInfo): void;
  /** After every optimizer step: flat numeric metrics (spec names: loss, grad_norm, learning_rate, ...). */
  step(metrics: Record<string, number>): void;
}

export interface TrainingJobResult {
  /** The job's metrics averaged over its optimizer steps (they go on the checkpoint). */
  metrics: Record<string, number>;
  /** False when the job had nothing trainable: the previous adapter carries over unchanged. */
  trained: boolean;
  /** The new adapter (both formats); null when nothing was trained. */
  adapter: AdapterFileSet | null;
}

/** Thrown for bad input (the job fails with this message; nothing is retried). */
export class TrainingInputError extends Error {}

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

/** A catalog base model and its GGUF on this machine as the trainer is told of it (the file's size lets a trainer elsewhere tell a different file at the same path). */
export async function baseModelRefOf(base: { name: string; source: string; trainWeights?: string }, ggufPath: string): Promise<BaseModelRef> {
  return { name: base.name, ggufPath, ggufSize: (await stat(ggufPath)).size, source: base.source, trainWeights: base.trainWeights ?? "" };
}
