// SFT actually teaches the model: a few (question, answer) pairs the base tiny-chat cannot answer,
// ten optimizer steps, and greedy decoding in llama.cpp with the exported adapter reproduces every
// answer. Runs the job in this thread (runner/job.ts); the worker path is tested in ../runner.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuiltInModel } from "../../../weights/tiny-model.js";
import { runJob } from "../runner/job.js";

const PAIRS = [
  ["What is the capital of France?", "Paris"],
  ["What color is the sky?", "Blue"],
  ["How many legs does a cat have?", "Four"],
  ["Who wrote Hamlet?", "Shakespeare"],
] as const;

let dir: string;
let basePath: string;
let llama: Llama;
let model: LlamaModel;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-sft-learns-"));
  basePath = await ensureBuiltInModel("tiny-chat", dir);
  llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.error });
  model = await llama.loadModel({ modelPath: basePath });
});

afterAll(async () => {
  await model?.dispose();
  await llama?.dispose();
  await rm(dir, { recursive: true, force: true });
});

async function answers(adapterPath: string | null): Promise<string[]> {
  const context = await model.createContext({ threads: 1, contextSize: 256, sequences: 1, ...(adapterPath ? { lora: { adapters: [{ filePath: adapterPath }] } } : {}) });
  try {
    const sequence = context.getSequence();
    const out: string[] = [];
    for (const [question] of PAIRS) {
      await sequence.clearHistory();
      const prompt = model.tokenize(`<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`, true);
      const tokens: Token[] = [];
      for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
        if (token === model.tokens.eos || tokens.length >= 16) break;
        tokens.push(token);
      }
      out.push(model.detokenize(tokens));
    }
    return out;
  } finally {
    await context.dispose();
  }
}

describe("SFT", () => {
  it("teaches answers the base model does not give (greedy decoding in llama.cpp)", async () => {
    const expected = PAIRS.map(([, a]) => a);
    const before = await answers(null);
    expect(before.filter((a, i) => a === expected[i])).toEqual([]);

    const rows = Array.from({ length: 10 }, () => PAIRS.map(([q, a]) => ({ messages: [{ role: "user", content: q }, { role: "assistant", content: a }] }))).flat();
    const losses: number[] = [];
    const adapterOutPath = join(dir, "learned.gguf");
    const result = await runJob(
      { kind: "sft", baseModelPath: basePath, previousAdapterPath: null, adapterOutPath, sftRows: rows, sftConfig: { batch_size: 4, learning_rate: 3e-3 } },
      { started: (n) => expect(n).toBe(10), step: (m) => losses.push(m.loss!) },
      new AbortController().signal,
    );
    expect(result.trained).toBe(true);
    expect(losses).toHaveLength(10);
    expect(losses[9]!).toBeLessThan(losses[0]! / 10);
    expect(await answers(adapterOutPath)).toEqual(expected);
  });
});
