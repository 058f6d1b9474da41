// The files this module writes, run by node-llama-cpp (llama.cpp on CPU, one thread): the
// built-in tiny-chat loads, tokenises ChatML, generates deterministically under greedy decoding,
// quantised variants compute as their decoded weights do, and LoRA adapters load and act as
// W + (alpha/rank)·B·A.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Llama, type LlamaContextOptions, type LlamaModel, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHATML_TEMPLATE } from "./chat-template.js";
import { GgufReader } from "./gguf/reader.js";
import { gv } from "./gguf/values.js";
import { writeGguf, type GgufTensorSource } from "./gguf/writer.js";
import { makeRandomLora, type LoraPair } from "./lora.js";
import { BUILT_IN_PRESETS, ensureBuiltInModel, makeTinyModel } from "./tiny-model.js";
import { buildTokenizer } from "./tokenizer/build.js";
import { encodeWithSpec } from "./tokenizer/encode.js";

let dir: string;
let llama: Llama;
let model: LlamaModel;
let modelPath: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "weights-llama-test-"));
  llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
  modelPath = await ensureBuiltInModel("tiny-chat", dir);
  model = await llama.loadModel({ modelPath });
});

afterAll(async () => {
  await model?.dispose();
  await llama?.dispose();
  await rm(dir, { recursive: true, force: true });
});

const chat = "<|im_start|>user\nHello, world! It's a test , ok ?<|im_end|>\n<|im_start|>assistant\n";

/** The next-token logits after `tokens`, as a dense array indexed by token id. */
async function nextLogits(m: LlamaModel, tokens: readonly Token[], lora?: LlamaContextOptions["lora"]): Promise<Float32Array> {
  const context = await m.createContext({ threads: 1, contextSize: 256, sequences: 1, lora });
  try {
    const sequence = context.getSequence();
    const last = tokens[tokens.length - 1]!;
    const results = await sequence.controlledEvaluate([...tokens.slice(0, -1), [last, { generateNext: { logits: true } }]]);
    const logits = results[tokens.length - 1]?.next.logits;
    if (!logits) throw new Error("no logits returned");
    const vocab = buildTokenizer().tokens.length;
    if (logits.size !== vocab) throw new Error(`expected ${vocab} logits, got ${logits.size}`);
    const dense = new Float32Array(vocab);
    for (const [token, value] of logits) dense[token] = value;
    return dense;
  } finally {
    await context.dispose();
  }
}

async function greedy(m: LlamaModel, tokens: Token[], count: number): Promise<number[]> {
  const context = await m.createContext({ threads: 1, contextSize: 256, sequences: 1 });
  try {
    const out: number[] = [];
    for await (const token of context.getSequence().evaluate(tokens, { temperature: 0, yieldEogToken: true })) {
      out.push(token);
      if (out.length >= count) break;
    }
    return out;
  } finally {
    await context.dispose();
  }
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

describe("tiny-chat in node-llama-cpp", () => {
  it("loads, with its ChatML template and special tokens readable from the file", () => {
    const metadata = model.fileInfo.metadata;
    expect(metadata.general.architecture).toBe("llama");
    expect(metadata.general.name).toBe("tiny-chat");
    expect(metadata.tokenizer.chat_template).toBe(CHATML_TEMPLATE);
    expect(model.tokens.eos).toBe(767);
    expect(model.tokens.bos).toBe(765);
    expect(model.trainContextSize).toBe(BUILT_IN_PRESETS["tiny-chat"].contextLength);
  });

  it("tokenises ChatML special tokens to their ids and round-trips text exactly", () => {
    const spec = buildTokenizer();
    const tokens = model.tokenize(chat, true);
    expect(tokens[0]).toBe(spec.ids["<|im_start|>"]);
    expect(tokens.filter((t) => t === 767)).toHaveLength(1);
    expect(tokens.filter((t) => t === 766)).toHaveLength(2);
    expect(model.detokenize(tokens, true)).toBe(chat);
    // Without specialTokens the markers are plain text, never the control ids.
    const plain = model.tokenize(chat, false);
    expect(plain.some((t) => t >= 765)).toBe(false);
    expect(model.detokenize(plain)).toBe(chat);
    // llama.cpp's BPE and the reference encoder agree on the merges and the pre-tokenizer.
    for (const text of ["Hello, world! It's 2024.", "  def train(model):\n\treturn {\"loss\": 0.5}\n", "naïve café — ✓ 日本"]) {
      expect(model.tokenize(text, false), text).toEqual(encodeWithSpec(spec, text));
      expect(model.detokenize(model.tokenize(text, false))).toBe(text);
    }
  });

  it("generates deterministically under greedy decoding, from a non-flat distribution", async () => {
    const tokens = model.tokenize(chat, true);
    const first = await greedy(model, tokens, 12);
    const second = await greedy(model, tokens, 12);
    expect(first.length).toBeGreaterThan(0);
    expect(second).toEqual(first);
    const logits = await nextLogits(model, tokens);
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
    expect(first[0]).toBe(best);
    const sorted = [...logits].sort((a, b) => b - a);
    expect(sorted[0]! - sorted[1]!).toBeGreaterThan(0); // a unique greedy choice
    expect(sorted[0]! - sorted[sorted.length - 1]!).toBeGreaterThan(5); // far from uniform
  });

  it("runs the f16 and q8_0 variants with logits close to f32", async () => {
    const tokens = model.tokenize(chat, true);
    const reference = await nextLogits(model, tokens);
    for (const [type, tolerance] of [["f16", 0.05], ["q8_0", 0.5]] as const) {
      const path = join(dir, `tiny-chat-${type}.gguf`);
      await makeTinyModel({ ...BUILT_IN_PRESETS["tiny-chat"], type, path });
      const variant = await llama.loadModel({ modelPath: path });
      try {
        expect(maxAbsDiff(await nextLogits(variant, tokens), reference), type).toBeLessThan(tolerance);
      } finally {
        await variant.dispose();
      }
    }
  });
});

describe("4-bit and K-quant files in node-llama-cpp", () => {
  // llama.cpp must decode the blocks as our reader does: its logits on a quantised file match
  // those on an f32 copy holding our decoding of every tensor, up to the noise of the 8-bit
  // activations its quantised matrix products use (a misread block would be far off).
  const shape = { ...BUILT_IN_PRESETS["tiny-chat"], layers: 2, embedding: 256, ff: 512 };

  async function dequantisedCopy(path: string, copy: string): Promise<void> {
    const r = await GgufReader.open(path);
    try {
      const tensors: GgufTensorSource[] = [];
      for (const t of r.tensors) tensors.push({ name: t.name, dims: t.dims, type: "F32", data: await r.readTensor(t.name) });
      await writeGguf(copy, new Map([...r.metadata, ["general.file_type", gv.u32(0)]]), tensors);
    } finally {
      await r.close();
    }
  }

  it.each(["q4_0", "q4_1", "q4_k", "q5_k", "q6_k"] as const)("%s: logits as with our dequantised weights", async (type) => {
    const path = join(dir, `tiny-${type}.gguf`);
    const copy = join(dir, `tiny-${type}-as-f32.gguf`);
    await makeTinyModel({ ...shape, type, path });
    await dequantisedCopy(path, copy);
    const tokens = model.tokenize(chat, true);
    const f32 = await llama.loadModel({ modelPath: copy });
    const expected = await nextLogits(f32, tokens).finally(() => f32.dispose());
    const quantised = await llama.loadModel({ modelPath: path });
    try {
      // Measured 0.09-0.14 on logits spanning ~15; quantising moves them 0.5 (q6_k) to 1.9 (q4_0).
      expect(maxAbsDiff(await nextLogits(quantised, tokens), expected), type).toBeLessThan(0.3);
    } finally {
      await quantised.dispose();
    }
  });
});

describe("LoRA adapters in node-llama-cpp", () => {
  const targets = ["q", "k", "v", "o", "gate", "up", "down"] as const;

  it("a random adapter changes the logits; one with B = 0 changes nothing", async () => {
    const tokens = model.tokenize(chat, true);
    const base = await nextLogits(model, tokens);
    const random = await makeRandomLora({ basePath: modelPath, path: join(dir, "lora-random.gguf"), seed: 7, rank: 4, alpha: 8, targets: [...targets] });
    const zero = await makeRandomLora({ basePath: modelPath, path: join(dir, "lora-zero.gguf"), seed: 7, rank: 4, alpha: 8, targets: [...targets], zeroB: true });
    const withRandom = await nextLogits(model, tokens, { adapters: [{ filePath: random.path, scale: 1 }] });
    const withZero = await nextLogits(model, tokens, { adapters: [{ filePath: zero.path, scale: 1 }] });
    expect(maxAbsDiff(withRandom, base)).toBeGreaterThan(0.5);
    expect(maxAbsDiff(withZero, base)).toBe(0);
    // Contexts without the adapter are unaffected by it having been loaded.
    expect(maxAbsDiff(await nextLogits(model, tokens), base)).toBe(0);
  });

  it("acts exactly as merging W + (alpha/rank)·B·A into the base weights (the layout is right)", async () => {
    const rank = 3;
    const alpha = 6;
    const lora = await makeRandomLora({ basePath: modelPath, path: join(dir, "lora-merge.gguf"), seed: 11, rank, alpha, targets: ["q", "v", "down"], layers: [0, 2] });
    const mergedPath = join(dir, "merged.gguf");
    await writeMerged(modelPath, mergedPath, lora.tensors, alpha / rank, rank);
    const merged = await llama.loadModel({ modelPath: mergedPath });
    try {
      const tokens = model.tokenize(chat, true);
      const viaAdapter = await nextLogits(model, tokens, { adapters: [{ filePath: lora.path }] });
      const viaMerge = await nextLogits(merged, tokens);
      const base = await nextLogits(model, tokens);
      // The adapter moves logits by several units (measured ~9); adapter vs merge differ only by
      // rounding (the KV cache is f16), measured ~2e-3. A wrong layout would differ by units.
      expect(maxAbsDiff(viaAdapter, base)).toBeGreaterThan(1);
      expect(maxAbsDiff(viaAdapter, viaMerge)).toBeLessThan(0.02);
    } finally {
      await merged.dispose();
    }
  });
});

/** Copies a base GGUF, adding scale·B·A to the adapted weights (W is n_out rows of n_in). */
async function writeMerged(basePath: string, outPath: string, pairs: Map<string, LoraPair>, scale: number, rank: number): Promise<void> {
  const reader = await GgufReader.open(basePath);
  try {
    const tensors: GgufTensorSource[] = [];
    for (const t of reader.tensors) {
      const w = await reader.readTensor(t.name);
      const pair = pairs.get(t.name);
      if (pair) {
        const [nIn, nOut] = t.dims as [number, number];
        for (let o = 0; o < nOut; o++) {
          for (let c = 0; c < nIn; c++) {
            let sum = 0;
            for (let r = 0; r < rank; r++) sum += pair.b[o * rank + r]! * pair.a[r * nIn + c]!;
            w[o * nIn + c] = w[o * nIn + c]! + scale * sum;
          }
        }
      }
      tensors.push({ name: t.name, dims: t.dims, type: "F32", data: w });
    }
    await writeGguf(outPath, reader.metadata, tensors);
  } finally {
    await reader.close();
  }
}
