// llama, and mistral, which is the same file: llama.cpp has no "mistral" architecture (its
// converter writes MistralForCausalLM checkpoints as "llama"; "mistral3"/"mistral4" are other
// models), and transformers reads such a file as LlamaForCausalLM. q/k are stored in llama.cpp's
// interleaved-RoPE order; transformers un-permutes them.
//
// transformers 5.24 would switch to MistralForCausalLM only for a general.name of exactly
// "mistral", and then fails (gguf-py has no "mistral" architecture to map tensor names with), so
// tiny-model.ts refuses that name for these files.
import { llamaTensorPlan } from "./llama-layout.js";
import type { ArchitectureSpec } from "./types.js";

export const llama: ArchitectureSpec = {
  gguf: "llama",
  outputHead: "untied",
  slidingWindow: false,
  metadata: () => [],
  tensors: (s) => llamaTensorPlan(s),
};

export const mistral: ArchitectureSpec = llama;
