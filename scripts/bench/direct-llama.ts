// The benchmark's workload driven directly on node-llama-cpp (no gateway, no IPC, no JSON, no
// HTTP): the reference the service's own overhead is measured against. Same prompts (the model's
// chat template), greedy, going on past end tokens (as ignore_eos does for the others), the same
// number of sequences; requests beyond them wait for a free one.
// Prints one JSON line: the threads used, and per level each request's tokens and time to first
// token, and the wall time.
import { Template } from "@huggingface/jinja";
import { getLlama, type LlamaContextSequence } from "node-llama-cpp";
import { threadsFor } from "../../services/inference/engine/llama/threads.js";

const [modelPath, threadsText, sequencesText, tokensText, ...levels] = process.argv.slice(2);
const sequences = Number(sequencesText);
const maxTokens = Number(tokensText);
const llama = await getLlama({ gpu: false, build: "never", progressLogs: false });
const model = await llama.loadModel({ modelPath: modelPath as string });
const template = new Template(String(model.fileInfo.metadata.tokenizer.chat_template ?? ""));
// 0: the service's own choice for this model (node-llama-cpp's default oversubscribes small machines).
const threads = threadsFor(Number(threadsText), llama.cpuMathCores, model.size);
const context = await model.createContext({ sequences, contextSize: 2048, threads });
const free: LlamaContextSequence[] = [];
while (context.sequencesLeft > 0) free.push(context.getSequence());
const waiting: ((sequence: LlamaContextSequence) => void)[] = [];
const acquire = () => new Promise<LlamaContextSequence>((resolve) => (free.length > 0 ? resolve(free.pop() as LlamaContextSequence) : waiting.push(resolve)));
const release = (sequence: LlamaContextSequence) => (waiting.length > 0 ? (waiting.shift() as (s: LlamaContextSequence) => void)(sequence) : free.push(sequence));

const run = async (prompt: string) => {
  const started = performance.now();
  const sequence = await acquire();
  try {
    await sequence.clearHistory();
    const text = template.render({ messages: [{ role: "user", content: prompt }], add_generation_prompt: true, bos_token: model.tokens.bosString ?? "", eos_token: model.tokens.eosString ?? "" });
    let first = 0;
    let count = 0;
    for await (const _token of sequence.evaluate(model.tokenize(text, true), { temperature: 0, yieldEogToken: true })) {
      if (count === 0) first = performance.now() - started;
      if (++count >= maxTokens) break;
    }
    return { tokens: count, ttftMs: first };
  } finally {
    release(sequence);
  }
};

await run("Warm up"); // the first decode allocates buffers
const results: Record<string, { runs: { tokens: number; ttftMs: number }[]; seconds: number }> = {};
for (const level of levels.map(Number)) {
  const started = performance.now();
  const runs = await Promise.all(Array.from({ length: level }, (_, i) => run(`Story number ${i + 1}`)));
  results[level] = { runs, seconds: (performance.now() - started) / 1000 };
}
process.stdout.write(JSON.stringify({ threads, results }) + "\n");
await context.dispose();
await model.dispose();
