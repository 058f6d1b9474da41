// llama.cpp threads for a model's contexts. ENGINE_THREADS wins when set. Otherwise a model whose
// weights take at least FULL_THREADS_MIN_BYTES gets the threads llama.cpp itself would pick (its
// math cores, as llama-server's default does); a smaller one gets one fewer, because its
// per-token compute is so short that the per-token work in JavaScript (engine and gateway)
// dominates, and a llama.cpp thread on every core only fights that work for the CPU. With threads
// chosen so, a decode step of a single token (one stream generating) also runs on one thread
// fewer: its compute is short too, and every token also costs the engine, gateway and client
// ~1.3 ms of CPU, which two busy llama.cpp threads leave no core for. The same holds for a set
// ENGINE_THREADS that takes every core. Measured on 2 cores, SmolLM2, one stream, with the OpenMP
// build (scripts/build-llama-addon.sh): 133-147 tokens/s with single-token steps on one thread,
// 124-136 on two; with node-llama-cpp's prebuilt binary, whose threads spin at every wait, two
// threads gave ~44 in two runs of three. Batches (README, "Inference speed"): every thread helps
// from a 61 MB model up, and hurts at 23 MB and below (the 1 MB tiny model on 2 threads with the
// OpenMP build: 1,700-3,800 tokens/s at 1-16 streams, against 2,300-4,800 on 1).
import type { LlamaContext } from "node-llama-cpp";

const MB = 2 ** 20;
export const FULL_THREADS_MIN_BYTES = 48 * MB;

export function threadsFor(configured: number, mathCores: number, modelBytes: number): number {
  if (configured > 0) return configured;
  const cores = Math.max(1, mathCores);
  return modelBytes >= FULL_THREADS_MIN_BYTES ? cores : Math.max(1, cores - 1);
}

/** Whether single-token steps run on one thread fewer: threads chosen here, or set to every core. */
export function singleTokenStepsTakeFewer(configured: number, mathCores: number): boolean {
  return configured === 0 || configured >= mathCores;
}

/** Threads for one decode step of `tokens` tokens on a context of `threads` threads. */
export function threadsForBatch(tokens: number, threads: number): number {
  return tokens >= 2 ? threads : Math.max(1, threads - 1);
}

/** The hook of node-llama-cpp's decode loop that patches/node-llama-cpp+3.22.1.patch adds. */
interface BatchThreadsHook {
  _threadsForBatch?: (tokens: number, threads: number) => number;
}

/** Threads chosen per decode step on this context (where singleTokenStepsTakeFewer says so). */
export function chooseThreadsPerBatch(context: LlamaContext): void {
  (context as unknown as BatchThreadsHook)._threadsForBatch = threadsForBatch;
}
