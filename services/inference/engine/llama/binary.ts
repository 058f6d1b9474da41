// The llama.cpp binary node-llama-cpp runs: the one scripts/build-llama-addon.sh built (OpenMP,
// this CPU's instructions; the install builds it) or, where that build failed, node-llama-cpp's
// prebuilt one, whose threads spin at every wait and stall when other processes need a core.
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";

export interface LlamaBinary {
  /** "localBuild": built by scripts/build-llama-addon.sh; "prebuilt": node-llama-cpp's own. */
  build: Llama["buildType"];
  /** Whether llama.cpp's threads are OpenMP's (from llama.cpp's own system info). */
  openmp: boolean;
}

/** node-llama-cpp's llama.cpp bindings, CPU only, never compiled at run time. */
export function loadLlama(): Promise<Llama> {
  return getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
}

export function describeBinary(llama: Llama): LlamaBinary {
  return { build: llama.buildType, openmp: /\bOPENMP = 1\b/.test(llama.systemInfo) };
}
