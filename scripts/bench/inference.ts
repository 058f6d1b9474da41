// `npm run bench:inference`: streamed chat completions (greedy, BENCH_TOKENS tokens with
// ignore_eos) at concurrency 1, 4, 8 and 16 on three systems with the same GGUF:
// - API: this service through its REST API, as clients use it;
// - llama-server: llama.cpp's own server, built from the llama.cpp source node-llama-cpp ships;
// - direct: node-llama-cpp driven in-process (no gateway, IPC, JSON or HTTP).
// Tokens/s and time to first token p50/p95 per level, and the ratios API / llama-server and
// API / direct. BENCH_RUNS runs (default 3), interleaved (the order rotates per run) so drift on
// a shared machine hits every column alike; a table per run, then the medians.
// BENCH_MODEL=path: a real GGUF (default: the built-in tiny model). BENCH_THREADS=N: the same
// llama.cpp threads everywhere (the service as ENGINE_THREADS=N, with its rule for single-token
// steps where N is every core); unset: each system's own defaults (the service's rule,
// also used for direct; llama-server's own). Uses its own database.
import { execFile } from "node:child_process";
import { cpus } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { startBenchService } from "./bench-service.js";
import { llamaServerBinaries, startLlamaServer, type LlamaServer } from "./llama-server.js";
import { interleavedRuns, streamLevels, type Figures } from "./interleaved.js";
import type { LlamaBinary } from "../../services/inference/engine/llama/binary.js";
import { readBinariesReport } from "../../services/inference/engine/llama-binaries.js";
import { figuresCell, levelFigures, type LevelFigures } from "./stats.js";
import { streamChat } from "./stream-client.js";

const LEVELS = [1, 4, 8, 16];
const TOKENS = Number(process.env.BENCH_TOKENS ?? 128);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SEQUENCES = 8; // the service's ENGINE_SEQUENCES default, and llama-server's slots with BENCH_THREADS
const THREADS = process.env.BENCH_THREADS ? Number(process.env.BENCH_THREADS) : null;
const MODEL_FILE = process.env.BENCH_MODEL ? resolve(process.env.BENCH_MODEL) : null;
const SYSTEMS = ["API", "llama-server", "direct"] as const;
type System = (typeof SYSTEMS)[number];
type RunFigures = Record<System, Figures>;

const binaries = await llamaServerBinaries();
const server = await startBenchService("inference", {
  ENGINE_SEQUENCES: String(SEQUENCES),
  ...(THREADS ? { ENGINE_THREADS: String(THREADS) } : {}),
  ...(MODEL_FILE ? { BASE_MODELS: `bench=${MODEL_FILE}` } : {}),
});
const modelName = MODEL_FILE ? "bench" : "tiny-chat";
const modelFile = MODEL_FILE ?? join(server.dataDir, "models", "tiny-chat.gguf");
const key = server.key;
let llamaServer: LlamaServer | undefined;
try {
  await streamChat({ url: server.url, key, model: modelName, prompt: "Warm up", maxTokens: 8 }); // loads the model and a context (and writes tiny-chat.gguf)

  llamaServer = await startLlamaServer(binaries, modelFile, THREADS ? ["-t", String(THREADS), "-np", String(SEQUENCES)] : []);
  const serverUrl = llamaServer.url;
  await streamChat({ url: serverUrl, key: null, model: modelName, prompt: "Warm up", maxTokens: 8 });

  let directThreads = 0;
  let directBinary: LlamaBinary | undefined;
  const direct = async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", join(import.meta.dirname, "direct-llama.ts"), modelFile, String(THREADS ?? 0), String(SEQUENCES), String(TOKENS), ...LEVELS.map(String)], {
      env: { ...process.env, UV_THREADPOOL_SIZE: "1" },
      maxBuffer: 16 * 2 ** 20,
    });
    const raw = JSON.parse(stdout.trim().split("\n").pop() as string) as { threads: number; binary: LlamaBinary; results: Record<number, { runs: { tokens: number; ttftMs: number }[]; seconds: number }> };
    directThreads = raw.threads;
    directBinary = raw.binary;
    const figures: Figures = {};
    for (const level of LEVELS) figures[level] = levelFigures(raw.results[level]!.runs, raw.results[level]!.seconds);
    return figures;
  };
  const measure: Record<System, () => Promise<Figures>> = {
    API: () => streamLevels({ url: server.url, key, model: modelName }, LEVELS, TOKENS),
    "llama-server": () => streamLevels({ url: serverUrl, key: null, model: modelName }, LEVELS, TOKENS),
    direct,
  };

  const threadsText = THREADS ? `${THREADS} llama.cpp threads everywhere, ${SEQUENCES} sequences/slots` : `each system's defaults (service: ENGINE_THREADS and ENGINE_SEQUENCES unset; direct: the service's thread rule; llama-server: no -t/-np/-c)`;
  console.log(`inference benchmark: ${modelName} (${modelFile}), ${TOKENS} tokens per request (greedy, ignore_eos, streamed), ${threadsText}, ${cpus().length} cores, ${RUNS} interleaved runs`);
  const medians = await interleavedRuns(SYSTEMS, LEVELS, RUNS, (system) => measure[system](), printTable);
  printTable(`median of ${RUNS} runs (service's and direct's llama.cpp threads: ${directThreads})`, medians);
  await prefixCache(server.url, key, modelName);
  const report = readBinariesReport();
  console.log(`\nnode-llama-cpp binary (service and direct): ${directBinary?.build === "localBuild" ? `the ${report.addon?.adopted ?? "local"} build the install checked (scripts/build-llama-addon.sh)` : "node-llama-cpp's prebuilt one (no local build passed its check? .cache/llama-binaries.json)"}, OpenMP ${directBinary?.openmp ? "on" : "off"}, AMX ${directBinary?.amx ? "on" : "off"}; llama-server: the ${report.server?.adopted ?? "?"} build, AMX ${report.server?.checks.find((check) => check.candidate === report.server?.adopted)?.amx ? "on" : "off"}. On a CPU with AMX, LLAMA_VARIANT=noamx bash scripts/install.sh switches both to the build without it (LLAMA_VARIANT=native back).`);
  console.log(`llama-server used: ${binaries}/llama-server (built and checked by the install, scripts/build-llama-server.sh; delete that directory to rebuild). README "Inference speed" explains the columns and the thread rule.`);
} finally {
  await llamaServer?.stop();
  await server.stop();
}

function printTable(title: string, figures: RunFigures): void {
  console.log(`\n${title}: tok/s, time to first token p50 and p95 (ms)`);
  console.log("conc |    API tok/s p50 p95 | llama-server tok/s p50 p95 | direct tok/s p50 p95 | API/llama-server | API/direct | TTFT p50 API - llama-server");
  for (const level of LEVELS) {
    const api = figures.API[level] as LevelFigures;
    const reference = figures["llama-server"][level] as LevelFigures;
    const direct = figures.direct[level] as LevelFigures;
    console.log(
      `${String(level).padStart(4)} | ${figuresCell(api).padStart(20)} | ${figuresCell(reference).padStart(26)} | ${figuresCell(direct).padStart(20)} | ${(api.tokensPerSecond / reference.tokensPerSecond).toFixed(2).padStart(16)} | ${(api.tokensPerSecond / direct.tokensPerSecond).toFixed(2).padStart(10)} | ${(api.ttftP50Ms - reference.ttftP50Ms).toFixed(0).padStart(6)} ms`,
    );
  }
}

/** The same long prompt twice in one cache_salt, then once in another salt: what the prefix cache saves. */
async function prefixCache(url: string, key: string, model: string): Promise<void> {
  const longPrompt = "Context: " + "the quick brown fox jumps over the lazy dog. ".repeat(40);
  const once = async (salt: string) => {
    const started = performance.now();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: longPrompt }], max_tokens: 1, temperature: 0, cache_salt: salt }),
    });
    const body = (await response.json()) as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
    return { ms: performance.now() - started, prompt: body.usage.prompt_tokens, cached: body.usage.prompt_tokens_details.cached_tokens };
  };
  const cold = await once("bench-a");
  const warm = await once("bench-a");
  const other = await once("bench-b");
  console.log(`\nAPI prefix cache (${cold.prompt}-token prompt, one token out): first ${cold.ms.toFixed(1)} ms (cached ${cold.cached}), again ${warm.ms.toFixed(1)} ms (cached ${warm.cached}), other cache_salt ${other.ms.toFixed(1)} ms (cached ${other.cached}); speed-up x${(cold.ms / warm.ms).toFixed(2)}`);
}
