// The adapter checks on real files: a LoRA GGUF written as llama.cpp loads it and PEFT files in
// safetensors' format for the built-in tiny-chat model pass; each kind of garbage (NaN, Inf, bad
// names, shapes, ranks, alphas, layers, architectures) is refused with a message naming it.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdapterCheckError, adapterBaseOf, checkAdapterFileName, checkAdapterFiles, checkPeftFiles, MAX_LORA_RANK, type AdapterBase } from "./adapter-check.js";
import { writeLoraAdapter, type LoraPair } from "./lora.js";
import { ensureBuiltInModel } from "./tiny-model.js";
import { safetensors } from "../../test/support/safetensors.js";

const RANK = 4;
const ALPHA = 8;
let dir: string;
let base: AdapterBase;
/** Two projections of layer 0, as [n_in, n_out]. */
let q: [number, number];
let down: [number, number];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "adapter-check-"));
  base = await adapterBaseOf(await ensureBuiltInModel("tiny-chat", dir));
  q = base.shapes.get("blk.0.attn_q.weight") as [number, number];
  down = base.shapes.get("blk.0.ffn_down.weight") as [number, number];
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function pair([nIn, nOut]: [number, number], rank = RANK, poison?: number): LoraPair {
  const a = Float32Array.from({ length: rank * nIn }, (_, i) => Math.sin(i) / 10);
  const b = Float32Array.from({ length: nOut * rank }, (_, i) => Math.cos(i) / 10);
  if (poison !== undefined) b[7] = poison;
  return { a, b };
}

let written = 0;
async function gguf(tensors: Map<string, LoraPair>, options: { rank?: number; alpha?: number; architecture?: string } = {}): Promise<Buffer> {
  const path = join(dir, `lora-${written++}.gguf`);
  await writeLoraAdapter({ path, base: { architecture: options.architecture ?? base.architecture }, rank: options.rank ?? RANK, alpha: options.alpha ?? ALPHA, tensors });
  return readFile(path);
}

const good = () =>
  new Map([
    ["blk.0.attn_q.weight", pair(q)],
    ["blk.0.ffn_down.weight", pair(down)],
  ]);


const P = "base_model.model.model.layers";
function peft(options: { r?: unknown; alpha?: unknown; poison?: number; tensors?: Record<string, { shape: number[]; data: Float32Array }> } = {}): Record<string, Buffer> {
  const qPair = pair(q, RANK, options.poison);
  const downPair = pair(down);
  const tensors = options.tensors ?? {
    [`${P}.0.self_attn.q_proj.lora_A.weight`]: { shape: [RANK, q[0]], data: qPair.a },
    [`${P}.0.self_attn.q_proj.lora_B.weight`]: { shape: [q[1], RANK], data: qPair.b },
    [`${P}.0.mlp.down_proj.lora_A.weight`]: { shape: [RANK, down[0]], data: downPair.a },
    [`${P}.0.mlp.down_proj.lora_B.weight`]: { shape: [down[1], RANK], data: downPair.b },
  };
  const config = `{"peft_type": "LORA", "r": ${String(options.r ?? RANK)}, "lora_alpha": ${String(options.alpha ?? ALPHA)}, "target_modules": ["q_proj", "down_proj"]}`;
  return { "adapter_config.json": Buffer.from(config), "adapter_model.safetensors": safetensors(tensors) };
}

async function refusal(check: () => unknown): Promise<string> {
  try {
    await check();
  } catch (error) {
    expect(error).toBeInstanceOf(AdapterCheckError);
    return (error as Error).message;
  }
  throw new Error("the check passed");
}

describe("adapter checks", () => {
  it("pass a well-formed adapter in both formats, with its rank, alpha and targets", async () => {
    const summary = await checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(good()) }, peft: peft() }, base);
    expect(summary).toEqual({ rank: RANK, alpha: ALPHA, targets: ["blk.0.attn_q.weight", "blk.0.ffn_down.weight"] });
    expect(checkPeftFiles(peft(), base).rank).toBe(RANK);
  });

  it("refuse non-finite values in either format", async () => {
    const nan = new Map([["blk.0.attn_q.weight", pair(q, RANK, NaN)]]);
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(nan) }, peft: {} }, base))).toMatch(/tensor blk\.0\.attn_q\.weight\.lora_b holds NaN \(at element 7\)/);
    const inf = new Map([["blk.0.attn_q.weight", pair(q, RANK, -Infinity)]]);
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(inf) }, peft: {} }, base))).toMatch(/holds an infinite value/);
    expect(await refusal(() => checkPeftFiles(peft({ poison: NaN }), base))).toMatch(/PEFT tensor .*q_proj\.lora_B\.weight holds NaN/);
    // 3.4e38 * 10 overflows f32: stored as Infinity.
    expect(await refusal(() => checkPeftFiles(peft({ poison: 3.4e39 }), base))).toMatch(/infinite value/);
  });

  it("refuse file names other than the adapter's own", async () => {
    for (const [name, why] of [
      ["..", "names a directory"],
      ["../adapter.gguf", "is a path"],
      ["a\0b", "holds a NUL"],
      ["x".repeat(300), "is 300 characters long"],
      ["README.md", "is not one of them"],
    ] as const) {
      expect(await refusal(() => checkAdapterFileName("peft", name))).toContain(why);
      expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(good()) }, peft: { ...peft(), [name]: Buffer.from("x") } }, base))).toContain(why);
    }
    expect(await refusal(() => checkAdapterFileName("gguf", "adapter_config.json"))).toContain("is not one of them");
    expect(await refusal(() => checkAdapterFiles({ gguf: {}, peft: {} }, base))).toContain("has no adapter.gguf");
  });

  it("refuse shapes, layers, tensors and architectures that are not the base model's", async () => {
    const wrongIn = new Map([["blk.0.attn_q.weight", pair([q[0] + 1, q[1]])]]);
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(wrongIn) }, peft: {} }, base))).toMatch(/blk\.0\.attn_q\.weight is \[\d+ -> \d+\] in the base model/);
    const beyond = new Map([[`blk.${base.blockCount}.attn_q.weight`, pair(q)]]);
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(beyond) }, peft: {} }, base))).toMatch(/is not the LoRA A\/B of a llama projection/);
    const norm = new Map([["blk.0.attn_norm.weight", pair([q[0], 1])]]);
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(norm) }, peft: {} }, base))).toMatch(/attn_norm/);
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(good(), { architecture: "qwen2" }) }, peft: {} }, base))).toContain('is for architecture "qwen2"');
    expect(await refusal(() => checkAdapterFiles({ gguf: { "adapter.gguf": Buffer.from("not a gguf") }, peft: {} }, base))).toContain("is not a readable GGUF");

    const qPair = pair(q);
    const transposed = { [`${P}.0.self_attn.q_proj.lora_A.weight`]: { shape: [q[0], RANK], data: qPair.a }, [`${P}.0.self_attn.q_proj.lora_B.weight`]: { shape: [q[1], RANK], data: qPair.b } };
    expect(await refusal(() => checkPeftFiles(peft({ tensors: transposed }), base))).toMatch(/lora_A must be \[4, \d+\]/);
    const stray = { [`${P}.0.self_attn.q_proj.lora_magnitude_vector`]: { shape: [1, q[1]], data: new Float32Array(q[1]) } };
    expect(await refusal(() => checkPeftFiles(peft({ tensors: stray }), base))).toContain("is not a LoRA A/B weight");
    const half = { [`${P}.0.self_attn.q_proj.lora_A.weight`]: { shape: [RANK, q[0]], data: qPair.a } };
    expect(await refusal(() => checkPeftFiles(peft({ tensors: half }), base))).toContain("has lora_A without lora_B");
    const truncated = peft();
    truncated["adapter_model.safetensors"] = truncated["adapter_model.safetensors"]!.subarray(0, 200);
    expect(await refusal(() => checkPeftFiles(truncated, base))).toContain("not a valid safetensors file");
  });

  it("refuse ranks and alphas out of bounds, and formats that disagree", async () => {
    for (const r of ["1e309", "4.5", "0", "-4", '"4"', String(MAX_LORA_RANK + 1)]) {
      expect(await refusal(() => checkPeftFiles(peft({ r }), base)), r).toContain(`r must be an integer from 1 to ${MAX_LORA_RANK}`);
    }
    for (const alpha of ["1e309", "0", "-1", "1e6", "null"]) {
      expect(await refusal(() => checkPeftFiles(peft({ alpha }), base)), alpha).toContain("lora_alpha must be a number above 0");
    }
    expect(await refusal(() => checkPeftFiles({ ...peft(), "adapter_config.json": Buffer.from("{") }, base))).toContain("is not JSON");
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(good(), { alpha: 1e9 }) }, peft: {} }, base))).toContain("adapter.lora.alpha must be a number above 0");
    expect(await refusal(async () => checkAdapterFiles({ gguf: { "adapter.gguf": await gguf(good(), { alpha: 16 }) }, peft: peft() }, base))).toContain("disagree");
  });
});
