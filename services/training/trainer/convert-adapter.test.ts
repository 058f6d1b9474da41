// TrainerPool.convertAdapter on a real trainer process: the PEFT files of a trained adapter convert
// into the GGUF the trainer wrote for it (tensor for tensor, byte for byte), a busy trainer
// converts beside its job (no lock, no weights loaded), and adapters that are unreadable or do
// not fit the base model are TrainingInputError.
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../core/logger.js";
import { GgufReader, getNumber, getString } from "../../weights/gguf/index.js";
import { ensureBuiltInModel } from "../../weights/tiny-model.js";
import { DEFAULT_TRAINER_PYTHON, LocalTrainer } from "./engine/local-trainer.js";
import { TrainerPool } from "./engine/trainer-pool.js";
import { type AdapterFileSet, type BaseModelRef, TrainingInputError } from "./api.js";
import { runTrainingJob } from "./runner/run-training-job.js";
import { safetensors } from "../../../test/support/safetensors.js";

let dir: string;
let local: LocalTrainer;
let pool: TrainerPool;
let ref: BaseModelRef;
let trained: AdapterFileSet;

const sftRows: JsonObject[] = [
  { messages: [{ role: "user", content: "Capital of France?" }, { role: "assistant", content: "Paris" }] },
  { messages: [{ role: "user", content: "Cat legs?" }, { role: "assistant", content: "Four" }] },
];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-convert-"));
  const path = await ensureBuiltInModel("tiny-chat", dir);
  ref = { name: "tiny-chat", ggufPath: path, ggufSize: (await stat(path)).size, source: "builtin:tiny-chat", trainWeights: "" };
  local = new LocalTrainer({ python: DEFAULT_TRAINER_PYTHON, dataDir: dir, threads: 1, log: createLogger({ level: "warn" }) });
  pool = new TrainerPool([], local);
  const result = await train(sftRows, new AbortController().signal);
  trained = result.adapter!;
}, 240_000);

afterAll(async () => {
  await pool?.stop();
  await rm(dir, { recursive: true, force: true });
});

function train(rows: JsonObject[], signal: AbortSignal, onStep?: () => void) {
  return runTrainingJob(
    pool,
    { jobId: "convert-test", kind: "sft", baseModel: ref, previousAdapter: null, sftRows: rows, sftConfig: { batch_size: 1, learning_rate: 2e-3 } },
    { started: () => undefined, step: () => onStep?.() },
    signal,
  );
}

interface GgufContents {
  metadata: { type: string | undefined; alpha: number | undefined };
  tensors: Map<string, { dims: number[]; type: string; bytes: Buffer }>;
}

async function readGguf(data: Buffer): Promise<GgufContents> {
  const path = join(dir, `read-${Math.random().toString(36).slice(2)}.gguf`);
  await writeFile(path, data);
  const reader = await GgufReader.open(path);
  try {
    const tensors = new Map<string, { dims: number[]; type: string; bytes: Buffer }>();
    for (const info of reader.tensors) tensors.set(info.name, { dims: info.dims, type: info.type, bytes: Buffer.from(await reader.readTensorBytes(info.name)) });
    return { metadata: { type: getString(reader.metadata, "adapter.type"), alpha: getNumber(reader.metadata, "adapter.lora.alpha") }, tensors };
  } finally {
    await reader.close();
  }
}


describe("TrainerPool.convertAdapter (PyTorch trainer process)", () => {
  it("converts a trained adapter's PEFT files into the GGUF the trainer wrote", async () => {
    const converted = await pool.convertAdapter(ref, trained.peft);
    const ours = await readGguf(converted.gguf["adapter.gguf"]!);
    const theirs = await readGguf(trained.gguf["adapter.gguf"]!);
    expect(ours.metadata).toEqual({ type: "lora", alpha: 16 });
    expect(ours.metadata).toEqual(theirs.metadata);
    expect([...ours.tensors.keys()].sort()).toEqual([...theirs.tensors.keys()].sort());
    expect(ours.tensors.size).toBe(4 * 7 * 2);
    for (const [name, tensor] of theirs.tensors) expect(ours.tensors.get(name), name).toEqual(tensor);
    // The PEFT files come back as the trainer writes them: these were written by it already.
    expect(converted.peft).toEqual(trained.peft);
  });

  it("converts on a busy trainer, beside its job", async () => {
    const job = new AbortController();
    let steps = 0;
    const long = train(Array.from({ length: 200 }, () => sftRows).flat(), job.signal, () => void steps++).catch((error: unknown) => error);
    try {
      while (steps === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await (await local.client()).describe()).busy).toBe(true);
      const started = performance.now();
      const converted = await pool.convertAdapter(ref, trained.peft);
      const seconds = (performance.now() - started) / 1000;
      expect(converted.gguf["adapter.gguf"]).toEqual(trained.gguf["adapter.gguf"]);
      // A second or two on an idle machine; generous for two cores shared with the job and other suites.
      expect(seconds).toBeLessThan(15);
      expect((await (await local.client()).describe()).busy).toBe(true);
    } finally {
      job.abort();
    }
    expect(await long).toMatchObject({ name: "AbortError" });
  }, 120_000);

  it("refuses adapters that are unreadable or do not fit the base model", async () => {
    const config = trained.peft["adapter_config.json"]!;
    await expect(pool.convertAdapter(ref, { "adapter_config.json": config })).rejects.toThrow(TrainingInputError);
    await expect(pool.convertAdapter(ref, { "adapter_config.json": config })).rejects.toThrow(/missing adapter_model\.safetensors/);
    const dora = Buffer.from(JSON.stringify({ ...(JSON.parse(config.toString()) as JsonObject), use_dora: true }));
    await expect(pool.convertAdapter(ref, { ...trained.peft, "adapter_config.json": dora })).rejects.toThrow(/DoRA adapters are not supported/);
    // An adapter for a model with other dimensions (tiny-chat's hidden size is 128).
    const other = safetensors({
      "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": { shape: [8, 96] },
      "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": { shape: [96, 8] },
    });
    const mismatched = pool.convertAdapter(ref, { ...trained.peft, "adapter_model.safetensors": other });
    await expect(mismatched).rejects.toBeInstanceOf(TrainingInputError);
    await expect(mismatched).rejects.toThrow(/q_proj: the adapter maps 96 -> 96 features, the base model's blk\.0\.attn_q\.weight 128 -> 128/);
  });
});
