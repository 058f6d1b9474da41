// `npm run bench:train`: the service's trainer (a fresh trainer process per round, driven through
// its gRPC contract as a worker drives it) beside a plain PyTorch + PEFT loop (the Hugging Face
// model from the same GGUF, full logits, padded batch; services/training/torch_trainer/reference)
// on the same model, batch and threads, rounds interleaved. Each step trains BENCH_ROWS rows of
// BENCH_SEQ tokens whose second half is trained (SFT-like). The service's trainer runs twice per
// round: with its defaults (gradient checkpointing "auto": only when activations would pass a
// quarter of the machine's memory) and with checkpointing on (the low-memory setting). Prints load
// time, first-step time, steady tokens/s and peak RSS of each, and the ratios service / plain.
//
// BENCH_MODEL (default SmolLM2-135M-Instruct Q4_1 from the install step), BENCH_ROWS (8),
// BENCH_SEQ (128), BENCH_STEPS (4), BENCH_THREADS (the cores), BENCH_ROUNDS (2).
import { execFile } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { createLogger } from "../../services/core/logger.js";
import { DEFAULT_TRAINER_PYTHON, LocalTrainer } from "../../services/training/trainer/engine/local-trainer.js";
import { TrainerPool } from "../../services/training/trainer/engine/trainer-pool.js";
import type { PreparedRow, TrainerJob } from "../../services/training/trainer/engine/trainer-job.js";
import { Prng } from "../../services/core/prng.js";

const MODEL = resolve(process.env.BENCH_MODEL ?? ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const ROWS = Number(process.env.BENCH_ROWS ?? 8);
const SEQ = Number(process.env.BENCH_SEQ ?? 128);
const STEPS = Number(process.env.BENCH_STEPS ?? 4);
const THREADS = Number(process.env.BENCH_THREADS ?? availableParallelism());
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PLAIN_LOOP = resolve("services/training/torch_trainer/reference/plain_peft_loop.py");

interface Measured {
  loadS: number;
  firstStepS: number;
  tokensPerS: number;
  peakRssMb: number;
}

async function service(round: number, checkpointing: "auto" | "on"): Promise<Measured> {
  const dir = await mkdtemp(join(tmpdir(), "bench-train-"));
  // The trainer process reads its defaults from the environment it inherits.
  process.env.TRAINER_GRADIENT_CHECKPOINTING = checkpointing;
  const local = new LocalTrainer({ python: DEFAULT_TRAINER_PYTHON, dataDir: dir, threads: THREADS, log: createLogger({ level: "warn" }) });
  const pool = new TrainerPool([], local);
  try {
    const rng = new Prng(round, "bench-rows");
    const rows: PreparedRow[] = Array.from({ length: ROWS * STEPS }, () => ({
      tokens: Array.from({ length: SEQ }, () => Math.floor(rng.uniform() * 49_000)),
      trained: Array.from({ length: SEQ }, (_, t) => t >= SEQ / 2),
      advantage: 0,
      weight: 1,
    }));
    const job: TrainerJob = {
      jobId: `bench-${round}`,
      baseModel: { name: "bench", ggufPath: MODEL, ggufSize: (await stat(MODEL)).size, source: MODEL, trainWeights: "" },
      lora: { rank: 8, alpha: 16, targetModules: [], seed: 3407 },
      loss: { kind: "sft" },
      optimizer: { weightDecay: 0, maxGradNorm: 1, beta1: 0.9, beta2: 0.99, eps: 1e-8 },
      rows,
      steps: Array.from({ length: STEPS }, (_, s) => ({ rows: Array.from({ length: ROWS }, (_, r) => s * ROWS + r), learningRate: 1e-4 })),
      previousAdapter: null,
      referenceAdapter: null,
    };
    let loadS = 0;
    let stepStart = 0;
    const stepSeconds: number[] = [];
    await pool.train(
      job,
      {
        started: (_n, info) => {
          loadS = info.loadSeconds;
          stepStart = performance.now();
        },
        step: () => {
          const now = performance.now();
          stepSeconds.push((now - stepStart) / 1000);
          stepStart = now;
        },
      },
      new AbortController().signal,
    );
    const info = await (await local.client()).describe();
    return summarize(loadS, stepSeconds, Number(info.peakRssBytes));
  } finally {
    await pool.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function plain(round: number): Promise<Measured> {
  const { stdout } = await promisify(execFile)(DEFAULT_TRAINER_PYTHON, [PLAIN_LOOP, "--model", MODEL, "--rows", String(ROWS), "--seq", String(SEQ), "--steps", String(STEPS), "--threads", String(THREADS), "--seed", String(round)], {
    maxBuffer: 1 << 20,
  });
  const out = JSON.parse(stdout.trim().split("\n").pop()!) as { load_seconds: number; step_seconds: number[]; peak_rss_bytes: number };
  return summarize(out.load_seconds, out.step_seconds, out.peak_rss_bytes);
}

function summarize(loadS: number, stepSeconds: number[], peakRssBytes: number): Measured {
  const steady = stepSeconds.slice(1);
  const mean = steady.length ? steady.reduce((a, b) => a + b, 0) / steady.length : stepSeconds[0]!;
  return { loadS, firstStepS: stepSeconds[0]!, tokensPerS: (ROWS * SEQ) / mean, peakRssMb: peakRssBytes / 2 ** 20 };
}

const fmt = (m: Measured) => `load ${m.loadS.toFixed(1)} s, first step ${m.firstStepS.toFixed(2)} s, ${m.tokensPerS.toFixed(0)} tokens/s, peak RSS ${m.peakRssMb.toFixed(0)} MB`;

process.stdout.write(`bench:train: ${MODEL}\n  ${ROWS} x ${SEQ} tokens per step (second half trained), ${STEPS} steps, LoRA r8/α16 on every projection, ${THREADS} threads, ${ROUNDS} interleaved rounds\n`);
const ours: Measured[] = [];
const lowMemory: Measured[] = [];
const theirs: Measured[] = [];
for (let round = 0; round < ROUNDS; round++) {
  ours.push(await service(round, "auto"));
  process.stdout.write(`  round ${round + 1} service trainer (defaults): ${fmt(ours[round]!)}\n`);
  theirs.push(await plain(round));
  process.stdout.write(`  round ${round + 1} plain PyTorch + PEFT: ${fmt(theirs[round]!)}\n`);
  lowMemory.push(await service(round, "on"));
  process.stdout.write(`  round ${round + 1} service trainer (checkpointing on): ${fmt(lowMemory[round]!)}\n`);
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const pick = (ms: Measured[], key: keyof Measured) => median(ms.map((m) => m[key]));
process.stdout.write("\n| | service (defaults) | service (checkpointing on) | plain PyTorch + PEFT | defaults / plain | checkpointing / plain |\n| --- | --- | --- | --- | --- | --- |\n");
for (const [label, key, digits] of [
  ["tokens/s (steady)", "tokensPerS", 0],
  ["first step (s)", "firstStepS", 2],
  ["peak RSS (MB)", "peakRssMb", 0],
  ["model load (s)", "loadS", 1],
] as const) {
  const [a, c, b] = [pick(ours, key), pick(lowMemory, key), pick(theirs, key)];
  process.stdout.write(`| ${label} | ${a.toFixed(digits)} | ${c.toFixed(digits)} | ${b.toFixed(digits)} | ${(a / b).toFixed(2)}x | ${(c / b).toFixed(2)}x |\n`);
}
process.stdout.write("(medians over the rounds; goal: tokens/s >= 1.0x at peak RSS <= 0.5x)\n");
