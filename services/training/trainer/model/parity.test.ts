// The trainer's log-probabilities against llama.cpp's (node-llama-cpp, log-softmax of its full
// logits) on the built-in tiny-chat: base, with an adapter written by writeLoraAdapter and read
// back by loadLora, and with one the trainer exported. With an f32 KV cache and flash attention
// off the engine computes in f32 throughout, so the two agree to ~1e-5 (1e-4 under a strong random adapter); the default context
// (f16 KV, flash attention) differs by ~4e-3 on the base model from f16 rounding alone, and by
// ~4e-2 under a strong random adapter.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Llama, type LlamaContextOptions, type LlamaModel, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GgufReader, gv, writeGguf, type GgufTensorSource } from "../../../weights/gguf/index.js";
import { makeRandomLora } from "../../../weights/lora.js";
import { Prng } from "../../../weights/prng.js";
import { ensureBuiltInModel } from "../../../weights/tiny-model.js";
import { CausalLm } from "./causal-lm.js";
import { exportLora, initLora, loadLora, type LoraWeights } from "./lora.js";

let dir: string;
let llama: Llama;
let engine: LlamaModel;
let lm: CausalLm;
let modelPath: string;
let tokens: number[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-parity-"));
  modelPath = await ensureBuiltInModel("tiny-chat", dir);
  llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
  engine = await llama.loadModel({ modelPath });
  lm = await CausalLm.load(modelPath);
  const chat =
    "<|im_start|>system\nYou are a terse assistant.<|im_end|>\n<|im_start|>user\nName three rivers in Europe and say where each one flows into the sea, please.<|im_end|>\n" +
    "<|im_start|>assistant\nThe Rhine reaches the North Sea, the Danube the Black Sea and the Rhone the Mediterranean.<|im_end|>\n";
  tokens = engine.tokenize(chat, true).map(Number);
});

afterAll(async () => {
  await engine?.dispose();
  await llama?.dispose();
  await rm(dir, { recursive: true, force: true });
});

type Precise = { precise: boolean };

/** log p(tokens[t+1] | tokens[..t]) from the engine's full logits. */
async function engineLogprobs(adapterPath: string | null, { precise }: Precise): Promise<number[]> {
  const options: LlamaContextOptions = { threads: 1, contextSize: 512, sequences: 1 };
  if (adapterPath) options.lora = { adapters: [{ filePath: adapterPath, scale: 1 }] };
  if (precise) Object.assign(options, { flashAttention: false, experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32" });
  const context = await engine.createContext(options);
  try {
    const out = await context.getSequence().controlledEvaluate(tokens.map((t) => [t as Token, { generateNext: { logits: true } }]));
    return tokens.slice(1).map((next, t) => {
      const logits = out[t]?.next.logits;
      if (!logits) throw new Error(`no logits at ${t}`);
      let max = -Infinity;
      for (const v of logits.values()) max = Math.max(max, v);
      let sum = 0;
      for (const v of logits.values()) sum += Math.exp(v - max);
      return logits.get(next as Token)! - max - Math.log(sum);
    });
  } finally {
    await context.dispose();
  }
}

async function maxDiff(lora: LoraWeights | null, adapterPath: string | null, precise: Precise): Promise<number> {
  const [mine] = await lm.logprobs(lora, [tokens]);
  const theirs = await engineLogprobs(adapterPath, precise);
  expect(mine!.length).toBe(theirs.length);
  const diff = Math.max(...theirs.map((v, i) => Math.abs(v - mine![i]!)));
  if (process.env.TRAINER_PARITY_LOG) console.log(`max |Δ logprob| ${diff.toExponential(2)} (${adapterPath ? "adapter" : "base"}, ${precise.precise ? "f32 KV" : "default context"})`);
  return diff;
}

describe("trainer log-probabilities vs llama.cpp", () => {
  it("agree on the base model", async () => {
    expect(tokens.length).toBeGreaterThan(60);
    expect(await maxDiff(null, null, { precise: true })).toBeLessThan(1e-4);
    expect(await maxDiff(null, null, { precise: false })).toBeLessThan(1e-2);
  });

  it("agree with an adapter written by writeLoraAdapter (random, non-zero B)", async () => {
    const path = join(dir, "random.gguf");
    await makeRandomLora({ basePath: modelPath, path, seed: 4, rank: 4, alpha: 8, targets: ["q", "k", "v", "o", "gate", "up", "down"] });
    const lora = await loadLora(path, lm.base);
    expect(lora.spec).toEqual({ rank: 4, alpha: 8, targets: ["q", "k", "v", "o", "gate", "up", "down"] });
    const base = await lm.logprobs(null, [tokens]);
    const adapted = await lm.logprobs(lora, [tokens]);
    expect(Math.max(...adapted[0]!.map((v, i) => Math.abs(v - base[0]![i]!)))).toBeGreaterThan(0.5); // it really acts
    // A strong adapter (logits move by units): measured 1e-4.
    expect(await maxDiff(lora, path, { precise: true })).toBeLessThan(5e-4);
  });

  it("agree with an adapter the trainer exported (default rank 8, alpha 16)", async () => {
    const lora = initLora(lm.base);
    const rng = new Prng(8, "b");
    for (const t of lora.tensors.values()) for (let i = 0; i < t.b.length; i++) t.b[i] = rng.normal() * 0.05;
    const path = join(dir, "exported.gguf");
    await exportLora(lora, path, modelPath);
    expect(await maxDiff(lora, path, { precise: true })).toBeLessThan(1e-4);
    const reread = await loadLora(path, lm.base);
    for (const [name, t] of lora.tensors) {
      expect(reread.tensors.get(name)!.a).toEqual(t.a);
      expect(reread.tensors.get(name)!.b).toEqual(t.b);
    }
  });

  it("agree with rope_freqs factors and linear RoPE scaling (Llama 3 style files)", async () => {
    const path = join(dir, "rope-variant.gguf");
    const reader = await GgufReader.open(modelPath);
    try {
      const metadata = new Map(reader.metadata);
      metadata.set("llama.rope.scaling.type", gv.str("linear"));
      metadata.set("llama.rope.scaling.factor", gv.f32(2));
      const headDim = 128 / 4;
      const factors = new Float32Array(headDim / 2).map((_, i) => 1 + (i % 5) * 0.75);
      const tensors: GgufTensorSource[] = [{ name: "rope_freqs.weight", dims: [headDim / 2], type: "F32", data: factors }];
      for (const t of reader.tensors) tensors.push({ name: t.name, dims: t.dims, type: "F32", data: await reader.readTensor(t.name) });
      await writeGguf(path, metadata, tensors);
    } finally {
      await reader.close();
    }
    const variantLm = await CausalLm.load(path);
    expect(variantLm.config.ropeFreqScale).toBe(0.5);
    const variant = await llama.loadModel({ modelPath: path });
    try {
      const context = await variant.createContext({ threads: 1, contextSize: 512, sequences: 1, flashAttention: false, experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32" });
      const out = await context.getSequence().controlledEvaluate(tokens.map((t) => [t as Token, { generateNext: { logits: true } }]));
      await context.dispose();
      const [mine] = await variantLm.logprobs(null, [tokens]);
      const [unscaled] = await lm.logprobs(null, [tokens]);
      let diff = 0;
      let moved = 0;
      tokens.slice(1).forEach((next, t) => {
        const logits = [...out[t]!.next.logits!.values()];
        const max = Math.max(...logits);
        const lse = max + Math.log(logits.reduce((a, v) => a + Math.exp(v - max), 0));
        const theirs = out[t]!.next.logits!.get(next as Token)! - lse;
        diff = Math.max(diff, Math.abs(theirs - mine![t]!));
        moved = Math.max(moved, Math.abs(unscaled![t]! - mine![t]!));
      });
      expect(moved).toBeGreaterThan(0.05); // the variant really rotates differently
      expect(diff).toBeLessThan(1e-4);
    } finally {
      await variant.dispose();
    }
  });
});
