// Live adapters as the command-style training API (services/tinker) sees them: a LoRA adapter and
// its optimizer state kept on a trainer between commands (trainer.proto `AdapterCommand`). The
// caller orders the commands of one adapter; the trainer runs one command or job at a time.
import type { AdapterFileSet, BaseModelRef } from "./api.js";

export type LiveAdapterCommandKind = "create" | "forward" | "forward_backward" | "optim_step" | "save_state" | "load_state" | "export" | "close";

export interface LiveAdapterLora {
  rank: number;
  /** 0: the trainer's default (2 x rank is PEFT's usual; the trainer says what it chose). */
  alpha: number;
  seed: number;
  /** Hugging Face module names; `lm_head` trains the unembedding. */
  targetModules: string[];
}

/** One sequence: position i of `tokens` predicts `targetTokens[i]`; the loss's other inputs by Tinker's names. */
export interface LiveAdapterDatum {
  tokens: number[];
  targetTokens: number[];
  inputs: Record<string, Float32Array>;
}

export interface AdamSettings {
  learningRate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  gradClipNorm: number;
}

export interface LiveAdapterCommand {
  kind: LiveAdapterCommandKind;
  adapterId: string;
  /** create, load_state. */
  baseModel?: BaseModelRef;
  lora?: LiveAdapterLora;
  /** forward, forward_backward. */
  lossFn?: string;
  lossFnConfig?: Record<string, number>;
  lossFnConfigText?: Record<string, string>;
  datums?: LiveAdapterDatum[];
  /** optim_step. */
  adam?: AdamSettings;
  /** save_state, load_state. */
  withOptimizer?: boolean;
  /** load_state: the files save_state returned. */
  stateFiles?: Record<string, Uint8Array>;
  /** export: "gguf", "peft"; empty: both. */
  outputFormats?: string[];
}

export interface LiveAdapterResult {
  metrics: Record<string, number>;
  optimizerSteps: number;
  /** forward*: per datum, per position (`logprobs`, `elementwise_loss`). */
  outputs: Record<string, Float32Array>[];
  /** save_state. */
  stateFiles: Record<string, Buffer>;
  /** export. */
  adapter: AdapterFileSet | null;
  /** create, load_state: the adapter's settings as the trainer resolved them. */
  lora: LiveAdapterLora | null;
}

/** The trainer has no live adapter of that id (never created, closed, or lost with a restarted trainer). */
export class LiveAdapterLostError extends Error {}
/** CREATE of an id that is live already. */
export class LiveAdapterExistsError extends Error {}
