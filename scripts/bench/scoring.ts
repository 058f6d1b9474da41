// `npm run bench:scoring`: the scoring path of /v1/completions as lm-evaluation-harness drives it
// (`local-completions` loglikelihood: prompt = context + continuation, echo, logprobs 1,
// max_tokens 1, temperature 0) against plain completions of the same prompts (max_tokens 1,
// temperature 0, no echo or log-probabilities: these reuse the prefix cache where prompts share a
// beginning, as lm-eval's do; scoring evaluates every prompt whole, as vLLM does), on
// SmolLM2-135M-Instruct (the suite's real small model). 40 requests of each kind, one at a time (lm-eval's default batch_size 1), then the same
// 40 prompts in one request (lm-eval's batch_size 40): requests/s (prompts/s for the batch) and the
// ratio scoring / plain. BENCH_RUNS interleaved runs (default 3; the order alternates), then the
// medians. BENCH_MODEL=path, BENCH_THREADS=N as in the other benchmarks.
import { cpus } from "node:os";
import { resolve } from "node:path";
import { startBenchService } from "./bench-service.js";
import { median } from "./stats.js";

const REQUESTS = 40;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const MODEL_FILE = resolve(process.env.BENCH_MODEL ?? ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const MODES = ["scoring", "plain"] as const;
type Mode = (typeof MODES)[number];

const SUBJECTS = ["the moon", "a river", "the heart", "a volcano", "bread", "a glacier", "copper", "the desert", "a violin", "rain"];
const ANSWERS = [" it reflects sunlight", " water flows downhill", " it pumps blood", " magma rises", " yeast ferments", " ice moves slowly", " it conducts electricity", " little rain falls", " strings vibrate", " clouds condense"];
/** lm-eval-like multiple-choice items: a question's context, then one candidate answer. */
const PROMPTS = Array.from({ length: REQUESTS }, (_, i) => {
  const subject = SUBJECTS[i % SUBJECTS.length] as string;
  const answer = ANSWERS[(i * 7 + Math.floor(i / SUBJECTS.length)) % ANSWERS.length] as string;
  return `Question: Which statement best describes ${subject}? Think about what you know of ${subject} from everyday life.\nAnswer:${answer}`;
});

const service = await startBenchService("scoring", {
  BASE_MODELS: `bench=${MODEL_FILE}`,
  ...(process.env.BENCH_THREADS ? { ENGINE_THREADS: process.env.BENCH_THREADS } : {}),
});
try {
  const body = (mode: Mode, prompt: string | string[]) => ({ model: "bench", prompt, max_tokens: 1, temperature: 0, ...(mode === "scoring" ? { echo: true, logprobs: 1 } : {}) });
  const complete = async (mode: Mode, prompt: string | string[]): Promise<void> => {
    const response = await fetch(`${service.url}/v1/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${service.key}`, "content-type": "application/json" },
      body: JSON.stringify(body(mode, prompt)),
    });
    const json = (await response.json()) as { choices?: { logprobs: { token_logprobs: (number | null)[] } | null }[]; error?: { message: string } };
    if (!response.ok) throw new Error(`${mode}: ${response.status} ${json.error?.message}`);
    const count = Array.isArray(prompt) ? prompt.length : 1;
    if (json.choices?.length !== count) throw new Error(`${mode}: ${json.choices?.length} choices, expected ${count}`);
    if (mode === "scoring" && json.choices.some((choice) => (choice.logprobs?.token_logprobs.length ?? 0) < 3)) throw new Error("scoring: the echoed log-probabilities are missing");
  };
  /** Prompts per second: the 40 requests one at a time, or all 40 prompts in one request. */
  const measure = async (mode: Mode, batched: boolean): Promise<number> => {
    const started = performance.now();
    if (batched) await complete(mode, PROMPTS);
    else for (const prompt of PROMPTS) await complete(mode, prompt);
    return REQUESTS / ((performance.now() - started) / 1000);
  };
  await complete("plain", "Warm up"); // loads the model and its context
  await complete("scoring", "Warm up");

  console.log(`scoring benchmark: ${MODEL_FILE}, ${REQUESTS} lm-eval-like scoring requests (echo, logprobs 1, max_tokens 1, temperature 0) against ${REQUESTS} plain completions (max_tokens 1) of the same prompts, ${process.env.BENCH_THREADS ?? "default"} threads, ${cpus().length} cores, ${RUNS} interleaved runs`);
  const results: Record<`${Mode} ${"single" | "batch"}`, number[]> = { "scoring single": [], "plain single": [], "scoring batch": [], "plain batch": [] };
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 === 0 ? MODES : [...MODES].reverse();
    for (const mode of order) {
      results[`${mode} single`].push(await measure(mode, false));
      results[`${mode} batch`].push(await measure(mode, true));
    }
    console.log(`run ${run + 1}: ${Object.entries(results).map(([name, values]) => `${name} ${(values.at(-1) as number).toFixed(1)}/s`).join(", ")}`);
  }
  const m = (name: keyof typeof results) => median(results[name]);
  console.log(`\nmedian of ${RUNS} runs:`);
  console.log(`one prompt per request: scoring ${m("scoring single").toFixed(1)} requests/s, plain ${m("plain single").toFixed(1)} requests/s, scoring/plain ${(m("scoring single") / m("plain single")).toFixed(2)}`);
  console.log(`${REQUESTS} prompts in one request: scoring ${m("scoring batch").toFixed(1)} prompts/s, plain ${m("plain batch").toFixed(1)} prompts/s, scoring/plain ${(m("scoring batch") / m("plain batch")).toFixed(2)}`);
} finally {
  await service.stop();
}
