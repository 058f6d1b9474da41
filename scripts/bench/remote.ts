// `npm run bench:remote`: remote engines' throughput. Streamed chat completions (greedy,
// BENCH_TOKENS tokens with ignore_eos) at concurrency 1, 4, 8 and 16 on three systems with the
// same GGUF, each llama-server with BENCH_THREADS threads (default 1) and 8 slots:
// - API -> 2 replicas: this service in front of two llama-server replicas it runs (ENGINES launch);
// - API -> 1 replica: the same with one replica (what the service itself costs);
// - 1 replica direct: one llama-server, its own API, no service in between.
// Tokens/s and time to first token p50/p95, and the ratios of both API columns to the direct one.
// BENCH_RUNS runs (default 3), interleaved; a table per run, then the medians. BENCH_MODEL=path: a
// real GGUF (default: the built-in tiny model). Uses its own database.
import { cpus } from "node:os";
import { join, resolve } from "node:path";
import { ensureBuiltInModel } from "../../services/weights/tiny-model.js";
import { startBenchService } from "./bench-service.js";
import { llamaServerBinaries, startLlamaServer, type LlamaServer } from "./llama-server.js";
import { interleavedRuns, streamLevels, type Figures } from "./interleaved.js";
import { figuresCell, type LevelFigures } from "./stats.js";
import { streamChat } from "./stream-client.js";

const LEVELS = [1, 4, 8, 16];
const TOKENS = Number(process.env.BENCH_TOKENS ?? 128);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const THREADS = Number(process.env.BENCH_THREADS ?? 1);
const SLOTS = 8;
const SYSTEMS = ["API -> 2 replicas", "API -> 1 replica", "1 replica direct"] as const;
type System = (typeof SYSTEMS)[number];
type RunFigures = Record<System, Figures>;

const binaries = await llamaServerBinaries();
const launch = (count: number) => ({ kind: "llama-server", launch: { count, binary: join(binaries, "llama-server"), threads: THREADS, slots: SLOTS } });
let modelFile = "";
const server = await startBenchService("remote", async (dataDir) => {
  modelFile = process.env.BENCH_MODEL ? resolve(process.env.BENCH_MODEL) : await ensureBuiltInModel("tiny-chat", dataDir);
  return { BASE_MODELS: `two=${modelFile},one=${modelFile}`, ENGINES: JSON.stringify({ two: launch(2), one: launch(1) }) };
});
const key = server.key;
let direct: LlamaServer | undefined;
try {
  direct = await startLlamaServer(binaries, modelFile, ["-t", String(THREADS), "-np", String(SLOTS)]);
  const targets: Record<System, { url: string; key: string | null; model: string }> = {
    "API -> 2 replicas": { url: server.url, key, model: "two" },
    "API -> 1 replica": { url: server.url, key, model: "one" },
    "1 replica direct": { url: direct.url, key: null, model: "bench" },
  };
  // Warm up: the replicas start with the service; each answers once before timing.
  for (const target of Object.values(targets)) for (let i = 0; i < 4; i++) await streamChat({ ...target, prompt: "Warm up", maxTokens: 8 });

  console.log(`remote-engine benchmark: ${modelFile}, ${TOKENS} tokens per request (greedy, ignore_eos, streamed), llama-server with ${THREADS} thread(s) and ${SLOTS} slots each, ${cpus().length} cores, ${RUNS} interleaved runs`);
  const medians = await interleavedRuns(SYSTEMS, LEVELS, RUNS, (system) => streamLevels(targets[system], LEVELS, TOKENS), printTable);
  printTable(`median of ${RUNS} runs`, medians);
  console.log(`\nllama-server used: ${binaries}/llama-server (built and checked by the install, scripts/build-llama-server.sh). README "Remote engines" explains the setup.`);
} finally {
  await direct?.stop();
  await server.stop();
}

function printTable(title: string, figures: RunFigures): void {
  console.log(`\n${title}: tok/s, time to first token p50 and p95 (ms)`);
  console.log("conc | API -> 2 replicas     | API -> 1 replica      | 1 replica direct      | 2 replicas / direct | 1 replica / direct");
  for (const level of LEVELS) {
    const [two, one, alone] = SYSTEMS.map((system) => figures[system][level] as LevelFigures) as [LevelFigures, LevelFigures, LevelFigures];
    console.log(
      `${String(level).padStart(4)} | ${figuresCell(two).padStart(21)} | ${figuresCell(one).padStart(21)} | ${figuresCell(alone).padStart(21)} | ${(two.tokensPerSecond / alone.tokensPerSecond).toFixed(2).padStart(19)} | ${(one.tokensPerSecond / alone.tokensPerSecond).toFixed(2).padStart(18)}`,
    );
  }
}
