// The same workload as the API benchmark, driven directly on node-llama-cpp (no gateway, no IPC,
// no JSON): the reference our overhead is measured against. Prints one JSON line.
import { getLlama, type Token } from "node-llama-cpp";

const [modelPath, threadsText, tokensText, ...levels] = process.argv.slice(2);
const threads = Number(threadsText);
const maxTokens = Number(tokensText);
const llama = await getLlama({ gpu: false, build: "never", progressLogs: false });
const model = await llama.loadModel({ modelPath: modelPath as string });
const results: Record<string, { tokensPerSecond: number; ttftMs: number }> = {};
for (const level of levels.map(Number)) {
  const context = await model.createContext({ threads, sequences: level, contextSize: 2048 });
  const run = async (index: number) => {
    const sequence = context.getSequence();
    const prompt = model.tokenize(`<|im_start|>user\nStory number ${index}<|im_end|>\n<|im_start|>assistant\n`, true);
    const started = performance.now();
    let first = 0;
    let count = 0;
    for await (const token of sequence.evaluate(prompt, { temperature: 0.8, seed: index })) {
      void (token as Token);
      if (count === 0) first = performance.now() - started;
      if (++count >= maxTokens) break;
    }
    return { count, first };
  };
  const started = performance.now();
  const runs = await Promise.all(Array.from({ length: level }, (_, i) => run(i)));
  const seconds = (performance.now() - started) / 1000;
  results[level] = { tokensPerSecond: runs.reduce((a, r) => a + r.count, 0) / seconds, ttftMs: runs.reduce((a, r) => a + r.first, 0) / runs.length };
  await context.dispose();
}
process.stdout.write(JSON.stringify(results) + "\n");
await model.dispose();
