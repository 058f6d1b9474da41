// Tiny model files and LoRA adapter files as files (no llama.cpp): determinism, layout, init
// scales, the built-in model's first-use write, and the adapter writer's checks.
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHATML_TEMPLATE } from "./chat-template.js";
import { GgufReader } from "./gguf/reader.js";
import { getNumber, getString } from "./gguf/values.js";
import { OUTPUT_LOGIT_STD } from "./architectures/llama-layout.js";
import { makeRandomLora, writeLoraAdapter } from "./lora.js";
import { BUILT_IN_MODELS, ensureBuiltInModel, makeTinyModel, type TinyModelOptions } from "./tiny-model.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tiny-model-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const small: Omit<TinyModelOptions, "path" | "seed"> = { layers: 2, embedding: 64, heads: 4, kvHeads: 2, ff: 128, contextLength: 256, type: "f32" };

async function sha(path: string): Promise<string> {
  return createHash("sha256").update(await readFile(path)).digest("hex");
}

function std(values: Float32Array): number {
  let sum = 0;
  for (const v of values) sum += v * v;
  return Math.sqrt(sum / values.length);
}

describe("makeTinyModel", () => {
  it("is byte-identical for the same seed and options, different for another seed", async () => {
    const a = await makeTinyModel({ ...small, seed: 5, path: join(dir, "a.gguf") });
    const b = await makeTinyModel({ ...small, seed: 5, path: join(dir, "b.gguf") });
    const c = await makeTinyModel({ ...small, seed: 6, path: join(dir, "c.gguf") });
    expect(await sha(a.path)).toBe(await sha(b.path));
    expect(await sha(a.path)).not.toBe(await sha(c.path));
    expect(a.bytes).toBe((await stat(a.path)).size);
  });

  it("writes a llama GGUF with GQA shapes, norms of 1 and the documented init scales", async () => {
    const info = await makeTinyModel({ ...small, seed: 1, path: join(dir, "shape.gguf"), name: "shape-test" });
    const r = await GgufReader.open(info.path);
    try {
      const m = r.metadata;
      expect(getString(m, "general.architecture")).toBe("llama");
      expect(getString(m, "general.name")).toBe("shape-test");
      expect(getNumber(m, "llama.attention.head_count")).toBe(4);
      expect(getNumber(m, "llama.attention.head_count_kv")).toBe(2);
      expect(getNumber(m, "llama.feed_forward_length")).toBe(128);
      expect(getNumber(m, "llama.context_length")).toBe(256);
      expect(getNumber(m, "llama.rope.freq_base")).toBe(10000);
      expect(getNumber(m, "llama.attention.layer_norm_rms_epsilon")).toBeCloseTo(1e-5, 10);
      expect(getString(m, "tokenizer.chat_template")).toBe(CHATML_TEMPLATE);
      expect(r.tensor("blk.0.attn_q.weight")!.dims).toEqual([64, 64]);
      expect(r.tensor("blk.0.attn_k.weight")!.dims).toEqual([64, 32]);
      expect(r.tensor("blk.1.ffn_down.weight")!.dims).toEqual([128, 64]);
      expect(r.tensor("output.weight")!.dims).toEqual([64, info.vocabSize]);
      expect([...(await r.readTensor("blk.1.ffn_norm.weight"))].every((v) => v === 1)).toBe(true);
      expect(std(await r.readTensor("blk.0.attn_q.weight"))).toBeCloseTo(1 / 8, 2);
      expect(std(await r.readTensor("token_embd.weight"))).toBeCloseTo(1, 1);
      expect(std(await r.readTensor("output.weight"))).toBeCloseTo(OUTPUT_LOGIT_STD / 8, 2);
      const params = r.tensors.reduce((s, t) => s + t.elements, 0);
      expect(params).toBe(info.parameters);
    } finally {
      await r.close();
    }
  });

  it("supports a tied head, f16 and q8_0, and refuses impossible shapes", async () => {
    const tied = await makeTinyModel({ ...small, seed: 1, tiedOutput: true, type: "q8_0", path: join(dir, "tied.gguf") });
    const r = await GgufReader.open(tied.path);
    try {
      expect(r.tensor("output.weight")).toBeUndefined();
      expect(r.tensor("token_embd.weight")!.type).toBe("Q8_0");
      expect(r.tensor("output_norm.weight")!.type).toBe("F32");
      expect(getNumber(r.metadata, "general.file_type")).toBe(7);
    } finally {
      await r.close();
    }
    const f16 = await makeTinyModel({ ...small, seed: 1, type: "f16", path: join(dir, "f16.gguf") });
    expect(f16.bytes).toBeLessThan((await makeTinyModel({ ...small, seed: 1, path: join(dir, "f32.gguf") })).bytes * 0.6);
    const bad = (o: Partial<TinyModelOptions>) => makeTinyModel({ ...small, seed: 1, path: join(dir, "bad.gguf"), ...o });
    await expect(bad({ heads: 3 })).rejects.toThrow(/not divisible by heads 3/);
    await expect(bad({ kvHeads: 3 })).rejects.toThrow(/not divisible by kvHeads 3/);
    await expect(bad({ type: "q8_0", ff: 100 })).rejects.toThrow(/multiples of 32/);
    await expect(bad({ seed: -1 })).rejects.toThrow(/seed/);
  });

  it.each([
    ["q4_0", "Q4_0", 2],
    ["q4_1", "Q4_1", 3],
    ["q4_k", "Q4_K", 14],
    ["q5_k", "Q5_K", 16],
    ["q6_k", "Q6_K", 18],
  ] as const)("writes %s: every 2-D weight %s, norms F32, file_type %d", async (type, tensorType, fileType) => {
    // Rows of 256 (embedding, ff, heads x head size) for the K-quants' super-blocks.
    const info = await makeTinyModel({ ...small, embedding: 256, ff: 512, seed: 1, type, path: join(dir, `${type}.gguf`) });
    const r = await GgufReader.open(info.path);
    try {
      expect(getNumber(r.metadata, "general.file_type")).toBe(fileType);
      for (const t of r.tensors) expect(t.type, t.name).toBe(t.dims.length === 1 ? "F32" : tensorType);
      // Decodes, close to the init scale 1 / sqrt(256) of attn_q (quantisation adds a little noise).
      expect(std(await r.readTensor("blk.0.attn_q.weight"))).toBeCloseTo(1 / 16, 2);
    } finally {
      await r.close();
    }
  });

  it("names the quantised type whose block size the shape does not fit", async () => {
    const bad = (o: Partial<TinyModelOptions>) => makeTinyModel({ ...small, seed: 1, path: join(dir, "bad.gguf"), ...o });
    await expect(bad({ type: "q4_0", ff: 100 })).rejects.toThrow("q4_0 needs embedding, ff and heads x head size to be multiples of 32");
    await expect(bad({ type: "q4_k" })).rejects.toThrow("q4_k needs embedding, ff and heads x head size to be multiples of 256");
    await expect(bad({ type: "q6_k", embedding: 256, ff: 384 })).rejects.toThrow(/q6_k needs .* multiples of 256/);
    await expect(bad({ type: "q3_k" as "q4_k" })).rejects.toThrow(/type must be one of f32, f16, q8_0, q4_0, q4_1, q4_k, q5_k, q6_k/);
  });
});

describe("ensureBuiltInModel", () => {
  it("writes DATA_DIR/models/tiny-chat.gguf once, atomically, and then reuses it", async () => {
    expect(BUILT_IN_MODELS).toEqual(["tiny-chat", "tiny-tools"]);
    const dataDir = join(dir, "data");
    const [p1, p2] = await Promise.all([ensureBuiltInModel("tiny-chat", dataDir), ensureBuiltInModel("tiny-chat", dataDir)]);
    expect(p1).toBe(join(dataDir, "models", "tiny-chat.gguf"));
    expect(p2).toBe(p1);
    expect(await readdir(join(dataDir, "models"))).toEqual(["tiny-chat.gguf"]); // no temp file left
    const before = await stat(p1);
    expect(await ensureBuiltInModel("tiny-chat", dataDir)).toBe(p1);
    expect((await stat(p1)).mtimeMs).toBe(before.mtimeMs);
    await expect(ensureBuiltInModel("nope" as "tiny-chat", dataDir)).rejects.toThrow(/unknown built-in model nope/);
  });
});

describe("LoRA adapter files", () => {
  let basePath: string;
  beforeAll(async () => {
    basePath = (await makeTinyModel({ ...small, seed: 1, path: join(dir, "lora-base.gguf") })).path;
  });

  it("stores A as [n_in, rank] and B as [rank, n_out] in ggml order, with the adapter keys", async () => {
    const lora = await makeRandomLora({ basePath, path: join(dir, "lora1.gguf"), seed: 3, rank: 4, alpha: 8, targets: ["q", "k", "down"] });
    const r = await GgufReader.open(lora.path);
    try {
      expect(getString(r.metadata, "general.type")).toBe("adapter");
      expect(getString(r.metadata, "adapter.type")).toBe("lora");
      expect(getString(r.metadata, "general.architecture")).toBe("llama");
      expect(getNumber(r.metadata, "adapter.lora.alpha")).toBe(8);
      expect(r.tensors).toHaveLength(2 * 3 * 2);
      expect(r.tensor("blk.0.attn_k.weight.lora_a")!.dims).toEqual([64, 4]);
      expect(r.tensor("blk.0.attn_k.weight.lora_b")!.dims).toEqual([4, 32]);
      expect(r.tensor("blk.1.ffn_down.weight.lora_a")!.dims).toEqual([128, 4]);
      expect(await r.readTensor("blk.1.ffn_down.weight.lora_b")).toEqual(lora.tensors.get("blk.1.ffn_down.weight")!.b);
    } finally {
      await r.close();
    }
  });

  it("refuses shapes that do not fit the base model", async () => {
    const pair = { a: new Float32Array(4 * 64), b: new Float32Array(63 * 4) };
    const write = (tensors: Map<string, typeof pair>, alpha = 8) => writeLoraAdapter({ path: join(dir, "bad-lora.gguf"), baseModelPath: basePath, alpha, rank: 4, tensors });
    await expect(write(new Map([["blk.0.attn_q.weight", pair]]))).rejects.toThrow(/base dims are \[64, 64\], but A is \[4 x 64\] and B is \[63 x 4\]/);
    await expect(write(new Map([["blk.9.attn_q.weight", pair]]))).rejects.toThrow(/no tensor blk.9.attn_q.weight/);
    await expect(write(new Map([["token_embd.weight", pair]]))).rejects.toThrow(/token embedding/);
    await expect(write(new Map([["blk.0.attn_q.weight", { a: pair.a, b: new Float32Array(64 * 4) }]]), 0)).rejects.toThrow(/alpha must be > 0/);
  });
});
