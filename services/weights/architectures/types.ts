// What an architecture adds to the common tiny-model file: its GGUF name, the hyper-parameter keys
// beyond the ones every decoder has, and its tensor plan. Each spec is checked against two readers:
// llama.cpp (src/models/<arch>.cpp, which aborts the process on a missing required key or tensor)
// and transformers' GGUF loader (integrations/ggml.py), which reads only the keys it maps and takes
// config defaults for the rest, so some choices below exist to match those defaults.
import type { GgufValue } from "../gguf/types.js";
import type { LlamaTensorPlan } from "./llama-layout.js";

export const TINY_ARCHITECTURES = ["llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"] as const;
export type TinyArchitecture = (typeof TINY_ARCHITECTURES)[number];

/** The sizes a spec sees, every default resolved. */
export interface ArchShape {
  layers: number;
  embedding: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ff: number;
  vocab: number;
  tiedOutput: boolean;
  /** Only written by specs with `slidingWindow: true`. */
  slidingWindow: number;
}

export interface ArchitectureSpec {
  /** general.architecture, which is also the prefix of the hyper-parameter keys. */
  gguf: string;
  /**
   * The head size when the caller gives none. Undefined: embedding / heads, and no other value is
   * allowed (the file then has no attention.key_length and both readers derive it).
   */
  defaultHeadDim?: number;
  /** "tied-only": llama.cpp ignores output.weight; "tied": tied unless asked otherwise. */
  outputHead: "untied" | "tied" | "tied-only";
  /** Whether the file carries <gguf>.attention.sliding_window (the slidingWindow option). */
  slidingWindow: boolean;
  /** general.name when the caller gives none; default tiny-<architecture>. */
  defaultName?: string;
  /** Keys written after the common hyper-parameters (full key names). */
  metadata(s: ArchShape): [string, GgufValue][];
  tensors(s: ArchShape): LlamaTensorPlan[];
}
