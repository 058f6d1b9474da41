// Child process of a build check (run by check-candidates.ts): loads one llama.cpp binary through
// node-llama-cpp and, for each model given, runs a batched prefill and a few decode steps, and the
// same prompt one token at a time. A broken build dies here (SIGILL, SIGSEGV: the parent names the
// model from the last "start" line) or computes differently in the batched kernels (AMX tiles,
// repacked weights) than in the one-token ones, which the comparison catches. Writes one JSON line
// per event on stdout.
//   node --import tsx addon-check.ts <auto|prebuilt> <local build name or "-"> <name=path>...
import { availableParallelism } from "node:os";
import type { LlamaContext, LlamaModel, Token } from "node-llama-cpp";
import { describeBinary, loadLlama } from "../binary.js";
import type { BinaryChoice } from "../../protocol.js";
import { compareLogits, type LogitComparison } from "./logit-comparison.js";

export type AddonCheckEvent =
  | { event: "loaded"; build: string; amx: boolean; openmp: boolean }
  | { event: "start"; model: string }
  | { event: "model"; model: string; ok: boolean; detail: string };

const PROMPT = "The quick brown fox jumps over the lazy dog. A batched prefill runs every matrix kernel on many rows at once; ";
const DECODE_STEPS = 4;
// Several threads, so per-thread state (AMX tile configuration, OpenMP teams) is exercised; set
// explicitly: node-llama-cpp's default made one-token steps of the prebuilt binary take a second each.
const CHECK_THREADS = Math.max(2, Math.min(4, availableParallelism()));

function emit(event: AddonCheckEvent): void {
  process.stdout.write(JSON.stringify(event) + "\n");
}

async function lastLogits(context: LlamaContext, tokens: Token[], oneByOne: boolean): Promise<{ logits: Map<Token, number>; sequence: ReturnType<LlamaContext["getSequence"]> }> {
  const sequence = context.getSequence();
  const wantLogits = { generateNext: { logits: true, token: true } } as const;
  type Item = Parameters<typeof sequence.controlledEvaluate>[0][number];
  if (!oneByOne) {
    const input = tokens.map((token, index): Item => (index === tokens.length - 1 ? [token, wantLogits] : token));
    const outputs = await sequence.controlledEvaluate(input);
    return { logits: outputs[outputs.length - 1]?.next?.logits ?? new Map(), sequence };
  }
  let logits = new Map<Token, number>();
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    const outputs = await sequence.controlledEvaluate([index === tokens.length - 1 ? [token, wantLogits] : token]);
    logits = outputs[0]?.next?.logits ?? logits;
  }
  return { logits, sequence };
}

async function checkModel(model: LlamaModel): Promise<{ ok: boolean; detail: string }> {
  let tokens = model.tokenize(PROMPT);
  while (tokens.length < 48) tokens = [...tokens, ...model.tokenize(PROMPT)];
  tokens = tokens.slice(0, 64);
  const context = await model.createContext({ contextSize: 256, batchSize: 128, sequences: 2, threads: CHECK_THREADS });
  try {
    const batched = await lastLogits(context, tokens, false);
    const single = await lastLogits(context, tokens, true);
    const comparison: LogitComparison = compareLogits(single.logits, batched.logits);
    // A few decode steps after the batched prefill, greedy, each logit finite.
    let next = [...batched.logits.entries()].reduce((best, entry) => (entry[1] > best[1] ? entry : best))[0];
    for (let step = 0; step < DECODE_STEPS; step++) {
      const outputs = await batched.sequence.controlledEvaluate([[next, { generateNext: { logits: true } }]]);
      const logits = outputs[0]?.next?.logits ?? new Map<Token, number>();
      if (logits.size === 0 || [...logits.values()].some((value) => !Number.isFinite(value))) {
        return { ok: false, detail: `decode step ${step + 1} gave ${logits.size === 0 ? "no logits" : "non-finite logits"}` };
      }
      next = [...logits.entries()].reduce((best, entry) => (entry[1] > best[1] ? entry : best))[0];
    }
    return { ok: comparison.ok, detail: `${tokens.length}-token prefill batched vs one token at a time: ${comparison.summary}; ${DECODE_STEPS} decode steps` };
  } finally {
    await context.dispose();
  }
}

async function main(): Promise<void> {
  const [choice, localName, ...models] = process.argv.slice(2);
  const llama = await loadLlama(choice as BinaryChoice, localName === "-" || localName === undefined ? undefined : localName);
  const binary = describeBinary(llama);
  emit({ event: "loaded", build: binary.build, amx: binary.amx, openmp: binary.openmp });
  for (const spec of models) {
    const split = spec.indexOf("=");
    const name = spec.slice(0, split);
    emit({ event: "start", model: name });
    const model = await llama.loadModel({ modelPath: spec.slice(split + 1) });
    try {
      emit({ event: "model", model: name, ...(await checkModel(model)) });
    } finally {
      await model.dispose();
    }
  }
  await llama.dispose();
}

await main();
