// llama.cpp threads for a model's contexts. ENGINE_THREADS wins when set. Otherwise a model whose
// weights take at least FULL_THREADS_MIN_BYTES gets the threads llama.cpp itself would pick (its
// math cores, as llama-server's default does); a smaller one gets one fewer, because its
// per-token compute is so short that the per-token work in JavaScript (engine and gateway)
// dominates, and a llama.cpp thread on every core only fights that work for the CPU. Measured on
// 2 cores (README, "Inference speed"): SmolLM2-135M Q4_1 (92 MB) decodes ~20% faster on 2 threads
// than on 1; the 1 MB tiny model is faster on 1.
const MB = 2 ** 20;
export const FULL_THREADS_MIN_BYTES = 16 * MB;

export function threadsFor(configured: number, mathCores: number, modelBytes: number): number {
  if (configured > 0) return configured;
  const cores = Math.max(1, mathCores);
  return modelBytes >= FULL_THREADS_MIN_BYTES ? cores : Math.max(1, cores - 1);
}
