// The llama.cpp binary node-llama-cpp runs: the one the install built and verified
// (build-check/cli.ts from scripts/install.sh: OpenMP, this CPU's instructions, checked on real quantized models
// before it is linked) or node-llama-cpp's prebuilt one, whose threads spin at every wait and stall
// when other processes need a core: where no build passed its check, or where the engine asks for
// it after the local build crashed twice on a model (engine/client.ts).
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import type { Logger } from "../../../core/logger.js";
import type { BinaryChoice } from "../protocol.js";
import { readBinariesReport } from "../llama-binaries.js";

export interface LlamaBinary {
  /** "localBuild": linked by the install (build-check/cli.ts); "prebuilt": node-llama-cpp's own. */
  build: Llama["buildType"];
  /** Whether llama.cpp's threads are OpenMP's (from llama.cpp's own system info). */
  openmp: boolean;
  /** Whether llama.cpp multiplies with Intel AMX tiles. */
  amx: boolean;
}

/**
 * node-llama-cpp's llama.cpp bindings, CPU only, never compiled at run time. `localBuildName`
 * loads a local build linked under another name than the default (a candidate being checked):
 * node-llama-cpp looks local builds up by a name derived from custom cmake options, and falls back
 * to its prebuilt binary where none has that name.
 */
export function loadLlama(choice: BinaryChoice = "auto", localBuildName?: string): Promise<Llama> {
  // A custom cmake option that names no local build makes node-llama-cpp skip to its prebuilt one.
  const name = choice === "prebuilt" ? "prebuilt" : localBuildName;
  const cmakeOptions: Record<string, string> = name === undefined ? {} : { SRL_BINARY: name };
  return getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error, cmakeOptions });
}

export function describeBinary(llama: Llama): LlamaBinary {
  return {
    build: llama.buildType,
    openmp: /\bOPENMP = 1\b/.test(llama.systemInfo),
    amx: /\bAMX_INT8 = 1\b/.test(llama.systemInfo),
  };
}

/** The start-up line: which binary runs, and why where it is not the install's checked build. */
export function logBinary(log: Logger, binary: LlamaBinary, choice: BinaryChoice): void {
  const addon = readBinariesReport().addon;
  const refused = (addon?.checks ?? []).filter((check) => !check.ok).map((check) => `${check.candidate}: ${check.reason}`);
  const fields = { ...binary, choice, adopted: addon?.adopted ?? null, refused };
  if (binary.build === "localBuild") return log.info("llama.cpp binary loaded: the install's checked build", fields);
  const why =
    choice === "prebuilt"
      ? "ENGINE_BINARY=prebuilt, or the engine's fallback after the local build crashed twice on a model"
      : addon === null
        ? "the install has not checked a local build (run bash scripts/install.sh)"
        : addon.adopted === "prebuilt"
          ? "no local build passed its check on real models (refused: see refused, and .cache/llama-binaries.json)"
          : "the checked local build is not linked (run bash scripts/install.sh)";
  log.warn(`llama.cpp binary loaded: node-llama-cpp's prebuilt one, without OpenMP (decode steps on several threads stall while other processes run), because ${why}`, fields);
}
