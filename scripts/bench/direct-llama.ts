// The benchmark's workload driven directly on node-llama-cpp (no gateway, no IPC, no JSON, no
// HTTP): the reference the service's own overhead is measured against. Same prompts (the model's
// chat template), greedy, going on past end tokens (as ignore_eos does for the others), the same
// number of sequences; requests beyond them wait for a free one. Like the service and llama-server,
// a request takes the free sequence whose cached tokens share the longest prefix with its prompt
// and evaluates only the rest (the benchmark repeats its prompts, so all three reuse them).
// Prints one JSON line: the threads used, the llama.cpp binary (binary.ts), and per level each
// request's tokens and time to first token, and the wall time.
import { Template } from "@huggingface/jinja";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { describeBinary, loadLlama } from "../../services/inference/engine/llama/binary.js";
import { threadsFor } from "../../services/inference/engine/llama/threads.js";
import { storyPrompt } from "./interleaved.js";

const [modelPath, threadsText, sequencesText, tokensText, ...levels] = process.argv.slice(2);
const sequences = Number(sequencesText);
const maxTokens = Number(tokensText);
const llama = await loadLlama();
const model = await llama.loadModel({ modelPath: modelPath as string });
const template = new Template(String(model.fileInfo.metadata.tokenizer.chat_template ?? ""));
// 0: the service's own choice for this model (node-llama-cpp's default oversubscribes small machines).
const threads = threadsFor(Number(threadsText), llama.cpuMathCores, model.size);
const context = await model.createContext({ sequences, contextSize: 2048, threads });
const free: LlamaContextSequence[] = [];
while (context.sequencesLeft > 0) free.push(context.getSequence());
const waiting: ((sequence: LlamaContextSequence) => void)[] = [];
const sharedPrefix = (sequence: LlamaContextSequence, tokens: Token[]) => sequence.compareContextTokens(tokens).firstDifferentIndex;
const acquire = (tokens: Token[]) =>
  new Promise<LlamaContextSequence>((resolve) => {
    if (free.length === 0) return waiting.push(resolve);
    const shared = free.map((sequence) => sharedPrefix(sequence, tokens));
    const best = shared.indexOf(Math.max(...shared));
    resolve(free.splice(best, 1)[0] as LlamaContextSequence);
  });
const release = (sequence: LlamaContextSequence) => (waiting.length > 0 ? (waiting.shift() as (s: LlamaContextSequence) => void)(sequence) : free.push(sequence));

const run = async (prompt: string, limit = maxTokens) => {
  const started = performance.now();
  const text = template.render({ messages: [{ role: "user", content: prompt }], add_generation_prompt: true, bos_token: model.tokens.bosString ?? "", eos_token: model.tokens.eosString ?? "" });
  const tokens = model.tokenize(text, true);
  const sequence = await acquire(tokens);
  try {
    // The last prompt token is always evaluated again: its logits give the first output token.
    const keep = Math.min(sharedPrefix(sequence, tokens), tokens.length - 1);
    if (keep === 0) await sequence.clearHistory();
    else if (sequence.nextTokenIndex > keep) await sequence.eraseContextTokenRanges([{ start: keep, end: sequence.nextTokenIndex }]);
    let first = 0;
    let count = 0;
    for await (const _token of sequence.evaluate(tokens.slice(keep), { temperature: 0, yieldEogToken: true })) {
      if (count === 0) first = performance.now() - started;
      if (++count >= limit) break;
    }
    return { tokens: count, ttftMs: first };
  } finally {
    release(sequence);
  }
};

await run("Warm up"); // the first decode allocates buffers
// One token of every level's requests first: the servers have cached the same prompts once their
// first run is over (the medians are of warm runs), and so every sequence has a prompt cached here.
for (const level of levels.map(Number)) await Promise.all(Array.from({ length: level }, (_, i) => run(storyPrompt(i), 1)));
const results: Record<string, { runs: { tokens: number; ttftMs: number }[]; seconds: number }> = {};
for (const level of levels.map(Number)) {
  const started = performance.now();
  const runs = await Promise.all(Array.from({ length: level }, (_, i) => run(storyPrompt(i))));
  results[level] = { runs, seconds: (performance.now() - started) / 1000 };
}
process.stdout.write(JSON.stringify({ threads, binary: describeBinary(llama), results }) + "\n");
await context.dispose();
await model.dispose();
