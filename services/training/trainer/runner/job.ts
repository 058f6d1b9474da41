// One training job, in whatever thread calls it (the worker thread in production, tests may call
// it directly): load base + LoRA, run the SFT or RL loop, write the new adapter.
import { copyFile } from "node:fs/promises";
import { TrainingInputError, type TrainingJobInput, type TrainingJobResult, type TrainingProgress } from "../api.js";
import { CausalLm } from "../model/causal-lm.js";
import { DEFAULT_LORA, DEFAULT_LORA_SEED, exportLora, initLora, loadLora, type LoraWeights } from "../model/lora.js";
import { runRlJob } from "./rl-job.js";
import { runSftJob } from "./sft-job.js";

export interface JobContext {
  input: TrainingJobInput;
  lm: CausalLm;
  lora: LoraWeights;
  progress: TrainingProgress;
  signal: AbortSignal;
}

/** What a training loop reports back; `trained: false` means the LoRA was not changed. */
export interface LoopOutcome {
  metrics: Record<string, number>;
  trained: boolean;
}

export async function runJob(input: TrainingJobInput, progress: TrainingProgress, signal: AbortSignal): Promise<TrainingJobResult> {
  validate(input);
  const lm = await CausalLm.load(input.baseModelPath);
  const lora = input.previousAdapterPath ? await loadLora(input.previousAdapterPath, lm.base) : initLora(lm.base, DEFAULT_LORA, input.seed ?? DEFAULT_LORA_SEED);
  const ctx: JobContext = { input, lm, lora, progress, signal };
  const started = performance.now();
  const outcome = input.kind === "sft" ? await runSftJob(ctx) : await runRlJob(ctx);
  if (outcome.trained || !input.previousAdapterPath) {
    await exportLora(lora, input.adapterOutPath, input.baseModelPath);
  } else {
    // Nothing trained: the new checkpoint is the previous adapter, byte for byte (spec §5.4 skip path).
    await copyFile(input.previousAdapterPath, input.adapterOutPath);
  }
  return { metrics: { ...outcome.metrics, "time/step_trainer_s": (performance.now() - started) / 1000 }, trained: outcome.trained };
}

function validate(input: TrainingJobInput): void {
  if (input.kind !== "sft" && input.kind !== "rl") throw new TrainingInputError(`unknown training kind ${String(input.kind)}`);
  if (!input.baseModelPath) throw new TrainingInputError("baseModelPath is required");
  if (!input.adapterOutPath) throw new TrainingInputError("adapterOutPath is required");
  if (input.adapterOutPath === input.previousAdapterPath) throw new TrainingInputError("adapterOutPath must differ from previousAdapterPath (llama.cpp caches adapters by path)");
  if (input.kind === "sft" && !Array.isArray(input.sftRows)) throw new TrainingInputError("an SFT job needs sftRows");
  if (input.kind === "rl" && !Array.isArray(input.groups)) throw new TrainingInputError("an RL job needs groups");
}
