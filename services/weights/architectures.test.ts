// Every architecture makeTinyModel writes: the file has that architecture's keys and tensors, and
// node-llama-cpp (llama.cpp on CPU, one thread) loads it and greedy-generates. A missing required
// key or tensor aborts the whole process in llama.cpp, so a broken spec shows up as a crashed run.
// (Agreement with transformers' GGUF loader is checked outside this suite.)
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GgufReader } from "./gguf/reader.js";
import { getNumber, getString } from "./gguf/values.js";
import { makeTinyModel, TINY_ARCHITECTURES, type TinyArchitecture, type TinyModelOptions } from "./tiny-model.js";

let dir: string;
let llama: Llama;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "weights-arch-test-"));
  llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
});

afterAll(async () => {
  await llama?.dispose();
  await rm(dir, { recursive: true, force: true });
});

const small: Omit<TinyModelOptions, "path" | "architecture"> = { seed: 3, layers: 2, embedding: 64, heads: 4, kvHeads: 2, ff: 128, contextLength: 256, type: "f32" };
const chat = "<|im_start|>user\nHello there, how are you?<|im_end|>\n<|im_start|>assistant\n";

async function greedy(model: LlamaModel, count: number): Promise<Token[]> {
  const context = await model.createContext({ threads: 1, contextSize: 256, sequences: 1 });
  try {
    const out: Token[] = [];
    for await (const token of context.getSequence().evaluate(model.tokenize(chat, true), { temperature: 0, yieldEogToken: true })) {
      out.push(token);
      if (out.length >= count) break;
    }
    return out;
  } finally {
    await context.dispose();
  }
}

async function sha(path: string): Promise<string> {
  return createHash("sha256").update(await readFile(path)).digest("hex");
}

describe("tiny models of every architecture in node-llama-cpp", () => {
  it.each(TINY_ARCHITECTURES)("%s loads and greedy-generates 4 tokens, deterministically", async (arch) => {
    const path = join(dir, `${arch}.gguf`);
    const info = await makeTinyModel({ ...small, architecture: arch, path });
    expect(info.architecture).toBe(arch);
    const model = await llama.loadModel({ modelPath: path });
    try {
      // mistral is a llama file to llama.cpp (it has no "mistral" architecture).
      expect(model.fileInfo.metadata.general.architecture).toBe(arch === "mistral" ? "llama" : arch);
      expect(model.tokens.eos).toBe(767);
      const first = await greedy(model, 4);
      expect(first).toHaveLength(4);
      expect(first.every((t) => t >= 0 && t < info.vocabSize)).toBe(true);
      expect(await greedy(model, 4)).toEqual(first);
    } finally {
      await model.dispose();
    }
  });

  it.each(TINY_ARCHITECTURES)("%s also runs quantised to q8_0", async (arch) => {
    const path = join(dir, `${arch}-q8_0.gguf`);
    await makeTinyModel({ ...small, architecture: arch, type: "q8_0", path });
    const model = await llama.loadModel({ modelPath: path });
    try {
      expect(await greedy(model, 4)).toHaveLength(4);
    } finally {
      await model.dispose();
    }
  });
});

describe("architecture layouts", () => {
  async function inspect(arch: TinyArchitecture, extra: Partial<TinyModelOptions> = {}) {
    const path = join(dir, `layout-${arch}.gguf`);
    await makeTinyModel({ ...small, ...extra, architecture: arch, path });
    const r = await GgufReader.open(path);
    const names = new Set(r.tensors.map((t) => t.name));
    const dims = (name: string) => r.tensor(name)?.dims;
    return { r, names, dims };
  }

  it("llama is the default and its bytes do not depend on saying so", async () => {
    const a = await makeTinyModel({ ...small, path: join(dir, "default.gguf") });
    const b = await makeTinyModel({ ...small, architecture: "llama", path: join(dir, "explicit.gguf") });
    expect(a.architecture).toBe("llama");
    expect(await sha(a.path)).toBe(await sha(b.path));
  });

  it("qwen2 has q/k/v biases; qwen3 has per-head q/k norms and a 128-wide head", async () => {
    const q2 = await inspect("qwen2");
    try {
      expect(q2.dims("blk.1.attn_q.bias")).toEqual([64]);
      expect(q2.dims("blk.1.attn_k.bias")).toEqual([32]);
      expect(q2.dims("blk.1.attn_v.bias")).toEqual([32]);
      expect(q2.names.has("blk.0.attn_output.bias")).toBe(false);
    } finally {
      await q2.r.close();
    }
    const q3 = await inspect("qwen3");
    try {
      expect(getNumber(q3.r.metadata, "qwen3.attention.key_length")).toBe(128);
      expect(q3.dims("blk.0.attn_q.weight")).toEqual([64, 4 * 128]);
      expect(q3.dims("blk.0.attn_k.weight")).toEqual([64, 2 * 128]);
      expect(q3.dims("blk.0.attn_q_norm.weight")).toEqual([128]);
      expect(q3.dims("blk.0.attn_k_norm.weight")).toEqual([128]);
      expect(q3.names.has("blk.0.attn_q.bias")).toBe(false);
    } finally {
      await q3.r.close();
    }
  });

  it("gemma2/gemma3 tie the head, add post norms and a sliding window; gemma3 adds q/k norms", async () => {
    for (const arch of ["gemma2", "gemma3"] as const) {
      const g = await inspect(arch, { slidingWindow: 32 });
      try {
        expect(g.names.has("output.weight")).toBe(false);
        expect(getNumber(g.r.metadata, `${arch}.attention.sliding_window`)).toBe(32);
        expect(getNumber(g.r.metadata, `${arch}.attention.key_length`)).toBe(256);
        expect(g.dims("blk.1.post_attention_norm.weight")).toEqual([64]);
        expect(g.dims("blk.1.post_ffw_norm.weight")).toEqual([64]);
        expect(g.names.has("blk.1.attn_q_norm.weight")).toBe(arch === "gemma3");
      } finally {
        await g.r.close();
      }
    }
    const g2 = await inspect("gemma2");
    try {
      expect(getNumber(g2.r.metadata, "gemma2.final_logit_softcapping")).toBe(30);
      expect(getNumber(g2.r.metadata, "gemma2.attn_logit_softcapping")).toBe(50);
    } finally {
      await g2.r.close();
    }
  });

  it("phi3 fuses q/k/v into attn_qkv and gate/up into ffn_up", async () => {
    const p = await inspect("phi3");
    try {
      expect(getString(p.r.metadata, "general.name")).toBe("tiny-phi");
      expect(p.dims("blk.0.attn_qkv.weight")).toEqual([64, 64 + 2 * 32]);
      expect(p.dims("blk.0.ffn_up.weight")).toEqual([64, 2 * 128]);
      for (const gone of ["attn_q", "attn_k", "attn_v", "ffn_gate"]) expect(p.names.has(`blk.0.${gone}.weight`)).toBe(false);
    } finally {
      await p.r.close();
    }
  });

  it("refuses options an architecture cannot carry, and names a reader would mistreat", async () => {
    const bad = (o: Partial<TinyModelOptions>) => makeTinyModel({ ...small, path: join(dir, "bad.gguf"), ...o });
    await expect(bad({ architecture: "qwen2", headDim: 32 })).rejects.toThrow(/no head size of its own/);
    await expect(bad({ architecture: "llama", slidingWindow: 16 })).rejects.toThrow(/no sliding window/);
    await expect(bad({ architecture: "gemma2", tiedOutput: false })).rejects.toThrow(/tiedOutput cannot be false/);
    await expect(bad({ architecture: "gemma3", headDim: 30, type: "q8_0" })).rejects.toThrow(/multiples of 32/);
    await expect(bad({ architecture: "phi3", name: "my-Phi-3" })).rejects.toThrow(/phi3 or phi-3/);
    await expect(bad({ architecture: "mistral", name: "mistral" })).rejects.toThrow(/transformers/);
    await expect(bad({ architecture: "nope" as TinyArchitecture })).rejects.toThrow(/unknown architecture nope/);
  });
});
