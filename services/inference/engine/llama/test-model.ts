// Test helper: SmolLM2-135M-Instruct Q4_1 (fetched by the install step) on a CPU llama.cpp, for
// engine tests that need real weights.
import { resolve } from "node:path";
import type { LlamaModel } from "node-llama-cpp";
import { loadLlama } from "./binary.js";

export async function loadSmolLM2(): Promise<LlamaModel> {
  const llama = await loadLlama();
  return llama.loadModel({ modelPath: resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf") });
}
