// Every architecture family the trainer supports loads and trains (one SFT job on a generated tiny
// GGUF of that architecture), and the adapter it exports is exact: llama.cpp serving the base GGUF
// with the exported LoRA GGUF gives the log-probabilities the trainer computes with the same
// adapter (f32 KV cache, no flash attention: the precise engine setting). A llama adapter whose
// q/k rows are left in Hugging Face's order is the negative control: far off.
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Llama, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../core/logger.js";
import { GgufReader, getNumber } from "../../weights/gguf/index.js";
import { writeLoraAdapter, type LoraPair } from "../../weights/lora.js";
import { adapterBaseOf, checkAdapterFiles } from "../../weights/adapter-check.js";
import { makeTinyModel, TINY_ARCHITECTURES, type TinyArchitecture, type TinyModelOptions } from "../../weights/tiny-model.js";
import type { BaseModelRef } from "./api.js";
import { DEFAULT_TRAINER_PYTHON, LocalTrainer } from "./engine/local-trainer.js";
import { TrainerPool } from "./engine/trainer-pool.js";
import { runTrainingJob } from "./runner/run-training-job.js";

let dir: string;
let pool: TrainerPool;
let llama: Llama;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-archs-"));
  pool = new TrainerPool([], new LocalTrainer({ python: DEFAULT_TRAINER_PYTHON, dataDir: dir, threads: 1, log: createLogger({ level: "warn" }) }));
  llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
}, 240_000);

afterAll(async () => {
  await llama?.dispose();
  await pool?.stop();
  await rm(dir, { recursive: true, force: true });
});

const SHAPE: Omit<TinyModelOptions, "path"> = { seed: 7, layers: 2, embedding: 64, heads: 4, kvHeads: 2, ff: 128, contextLength: 256, type: "f32" };
const PER_ARCH: Partial<Record<TinyArchitecture, Partial<TinyModelOptions>>> = {
  // A window shorter than the sequence, so the sliding layers' masks matter.
  gemma2: { slidingWindow: 16 },
  // Five sliding layers and one global one.
  gemma3: { slidingWindow: 16, layers: 6, ropeFreqBase: 1_000_000 },
};
// llama.cpp's CPU GELU (gemma's activation) goes through an f16 table: ~3e-3 on the base alone.
const TOLERANCE: Partial<Record<TinyArchitecture, number>> = { gemma2: 1e-2, gemma3: 1e-2 };

const ROWS = [
  { messages: [{ role: "user", content: "Name a river in Europe." }, { role: "assistant", content: "The Danube flows into the Black Sea." }] },
  { messages: [{ role: "system", content: "Be terse." }, { role: "user", content: "And one in Africa?" }, { role: "assistant", content: "The Nile." }] },
];
const TEXT = "<|im_start|>user\nWhich rivers reach the North Sea?<|im_end|>\n<|im_start|>assistant\nThe Rhine and the Elbe do.<|im_end|>\n";

async function llamaLogprobs(modelPath: string, adapterPath: string | null, text: string): Promise<{ tokens: number[]; logprobs: number[] }> {
  const model = await llama.loadModel({ modelPath });
  try {
    const context = await model.createContext({
      threads: 1,
      contextSize: 256,
      sequences: 1,
      flashAttention: false,
      experimentalKvCacheKeyType: "F32",
      experimentalKvCacheValueType: "F32",
      ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath }] } } : {}),
    });
    try {
      const tokens = model.tokenize(text, true);
      const out = await context.getSequence().controlledEvaluate(tokens.map((t) => [t, { generateNext: { logits: true } }] as [Token, { generateNext: { logits: true } }]));
      const logprobs = tokens.slice(1).map((next, i) => {
        const logits = out[i]!.next!.logits!;
        let max = -Infinity;
        for (const [, v] of logits) max = Math.max(max, v);
        let sum = 0;
        for (const [, v] of logits) sum += Math.exp(v - max);
        return logits.get(next)! - max - Math.log(sum);
      });
      return { tokens: tokens.map(Number), logprobs };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe("architecture families", () => {
  it.each([...TINY_ARCHITECTURES])(
    "%s: trains one step, and llama.cpp with the exported adapter gives the trainer's log-probs",
    async (arch) => {
      const path = join(dir, `tiny-${arch}.gguf`);
      await makeTinyModel({ ...SHAPE, ...PER_ARCH[arch], architecture: arch, path });
      const ref: BaseModelRef = { name: `tiny-${arch}`, ggufPath: path, ggufSize: (await stat(path)).size, source: path, trainWeights: "" };
      const losses: number[] = [];
      const result = await runTrainingJob(
        pool,
        { jobId: arch, kind: "sft", baseModel: ref, previousAdapter: null, sftRows: ROWS, sftConfig: { batch_size: 2, learning_rate: 2e-2 } },
        { started: () => undefined, step: (m) => losses.push(m.loss!) },
        new AbortController().signal,
      );
      expect(result.trained).toBe(true);
      // What the worker checks before a checkpoint (names, dims, finite values) holds for every family.
      expect(await checkAdapterFiles(result.adapter!, await adapterBaseOf(path))).toMatchObject({ rank: expect.any(Number) });
      expect(losses).toHaveLength(1);
      expect(Number.isFinite(losses[0])).toBe(true);

      const adapterPath = join(dir, `${arch}-lora.gguf`);
      await writeFile(adapterPath, result.adapter!.gguf["adapter.gguf"]!);
      const served = await llamaLogprobs(path, adapterPath, TEXT);
      const base = await llamaLogprobs(path, null, TEXT);
      const [trainer] = await pool.score(ref, [served.tokens], { format: "peft", files: result.adapter!.peft }, new AbortController().signal);
      const [trainerBase] = await pool.score(ref, [served.tokens], null, new AbortController().signal);
      const tolerance = TOLERANCE[arch] ?? 1e-3;
      const gap = maxDiff(served.logprobs, trainer!);
      // The adapter changed the model (so the comparison means something) ...
      expect(maxDiff(served.logprobs, base.logprobs)).toBeGreaterThan(20 * tolerance);
      // ... and the engine computes with it what the trainer computes.
      expect(gap, `${arch}: max |engine - trainer| with the adapter`).toBeLessThan(tolerance);
      expect(maxDiff(base.logprobs, trainerBase!)).toBeLessThan(tolerance);

      if (arch === "llama") {
        // The negative control: the same adapter with q/k's B rows in Hugging Face's order.
        const wrong = join(dir, "llama-lora-unpermuted.gguf");
        await writeUnpermuted(adapterPath, wrong, path);
        const misread = await llamaLogprobs(path, wrong, TEXT);
        expect(maxDiff(misread.logprobs, trainer!)).toBeGreaterThan(20 * gap + 0.05);
      }
    },
    180_000,
  );
});

/** Rewrites a llama LoRA GGUF with the q/k B rows un-permuted (llama.cpp's rope layout undone). */
async function writeUnpermuted(from: string, to: string, basePath: string): Promise<void> {
  const base = await GgufReader.open(basePath);
  await base.close();
  const heads = getNumber(base.metadata, "llama.attention.head_count")!;
  const kvHeads = getNumber(base.metadata, "llama.attention.head_count_kv")!;
  const reader = await GgufReader.open(from);
  try {
    const alpha = getNumber(reader.metadata, "adapter.lora.alpha")!;
    const tensors = new Map<string, LoraPair>();
    let rank = 0;
    for (const info of reader.tensors) {
      if (!info.name.endsWith(".lora_a")) continue;
      const name = info.name.slice(0, -".lora_a".length);
      rank = info.dims[1]!;
      const a = (await reader.readTensor(info.name)) as Float32Array;
      let b = (await reader.readTensor(`${name}.lora_b`)) as Float32Array;
      const n = name.includes("attn_q") ? heads : name.includes("attn_k") ? kvHeads : 0;
      if (n) b = unpermuteRows(b, n, rank);
      tensors.set(name, { a, b });
    }
    await writeLoraAdapter({ path: to, baseModelPath: basePath, alpha, rank, tensors });
  } finally {
    await reader.close();
  }
}

/** GGUF rows (head, i, pair) -> Hugging Face rows (head, pair, i), each row `width` values. */
function unpermuteRows(b: Float32Array, heads: number, width: number): Float32Array {
  const rows = b.length / width;
  const half = rows / heads / 2;
  const out = new Float32Array(b.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let p = 0; p < 2; p++) {
        const src = (h * half + i) * 2 + p;
        const dst = (h * 2 + p) * half + i;
        out.set(b.subarray(src * width, (src + 1) * width), dst * width);
      }
    }
  }
  return out;
}
