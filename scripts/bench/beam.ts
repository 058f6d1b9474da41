// `npm run bench:beam`: what beam search costs against sampling the same number of continuations.
// One chat completion per measurement, BENCH_TOKENS tokens per sequence (ignore_eos, so every beam
// and every sample runs to the end), for n = 1, 2, 4 and 8:
// - beam: use_beam_search with n beams (logprobs: true, as beams are scored by them);
// - sampled+logprobs: n sampled choices reporting log-probabilities (the same per-token work:
//   raw logits read back for every token);
// - sampled: n sampled choices without log-probabilities (the engine's fastest path).
// Sequence-tokens per second (n x tokens / wall time) and the ratios beam / sampled+logprobs and
// beam / sampled. BENCH_RUNS interleaved runs (default 3; the order rotates), then the medians.
// BENCH_MODEL=path (default: SmolLM2-135M-Instruct Q4_1 from .cache/models), BENCH_THREADS=N.
import { cpus } from "node:os";
import { resolve } from "node:path";
import { startBenchService } from "./bench-service.js";
import { median } from "./stats.js";

const WIDTHS = [1, 2, 4, 8];
const TOKENS = Number(process.env.BENCH_TOKENS ?? 64);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const MODEL_FILE = resolve(process.env.BENCH_MODEL ?? ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const MODES = ["beam", "sampled+logprobs", "sampled"] as const;
type Mode = (typeof MODES)[number];

const service = await startBenchService("beam", {
  ENGINE_SEQUENCES: String(Math.max(...WIDTHS)),
  BASE_MODELS: `bench=${MODEL_FILE}`,
  ...(process.env.BENCH_THREADS ? { ENGINE_THREADS: process.env.BENCH_THREADS } : {}),
});
try {
  const complete = async (mode: Mode, n: number): Promise<number> => {
    const started = performance.now();
    const response = await fetch(`${service.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${service.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "bench",
        messages: [{ role: "user", content: "Tell me a story about a lighthouse keeper." }],
        n,
        max_tokens: TOKENS,
        ignore_eos: true,
        ...(mode === "beam" ? { use_beam_search: true, logprobs: true } : { temperature: 1, logprobs: mode === "sampled+logprobs" }),
      }),
    });
    const body = (await response.json()) as { usage?: { completion_tokens: number }; error?: { message: string } };
    if (!response.ok) throw new Error(`${mode} n=${n}: ${response.status} ${body.error?.message}`);
    if (body.usage?.completion_tokens !== n * TOKENS) throw new Error(`${mode} n=${n}: ${body.usage?.completion_tokens} tokens, expected ${n * TOKENS}`);
    return (n * TOKENS) / ((performance.now() - started) / 1000);
  };
  await complete("sampled", 1); // loads the model and its context

  console.log(`beam search benchmark: ${MODEL_FILE}, ${TOKENS} tokens per sequence (ignore_eos), ${process.env.BENCH_THREADS ?? "default"} threads, ${cpus().length} cores, ${RUNS} interleaved runs`);
  const all: Record<Mode, Record<number, number[]>> = { beam: {}, "sampled+logprobs": {}, sampled: {} };
  for (let run = 0; run < RUNS; run++) {
    const order = MODES.map((_, i) => MODES[(i + run) % MODES.length] as Mode);
    const figures = {} as Record<Mode, Record<number, number>>;
    for (const mode of order) {
      figures[mode] = {};
      for (const n of WIDTHS) {
        const rate = await complete(mode, n);
        figures[mode][n] = rate;
        (all[mode][n] ??= []).push(rate);
      }
    }
    printTable(`run ${run + 1}/${RUNS} (order: ${order.join(", ")})`, figures);
  }
  const medians = Object.fromEntries(MODES.map((mode) => [mode, Object.fromEntries(WIDTHS.map((n) => [n, median(all[mode][n] as number[])]))])) as Record<Mode, Record<number, number>>;
  printTable(`median of ${RUNS} runs`, medians);
} finally {
  await service.stop();
}

function printTable(title: string, figures: Record<Mode, Record<number, number>>): void {
  console.log(`\n${title}: sequence-tokens/s (n x ${TOKENS} tokens / wall time)`);
  console.log("   n |  beam | sampled+logprobs | sampled | beam/sampled+logprobs | beam/sampled");
  for (const n of WIDTHS) {
    const beam = figures.beam[n] as number;
    const withLogprobs = figures["sampled+logprobs"][n] as number;
    const sampled = figures.sampled[n] as number;
    console.log(`${String(n).padStart(4)} | ${beam.toFixed(1).padStart(5)} | ${withLogprobs.toFixed(1).padStart(16)} | ${sampled.toFixed(1).padStart(7)} | ${(beam / withLogprobs).toFixed(2).padStart(21)} | ${(beam / sampled).toFixed(2).padStart(12)}`);
  }
}
