// `npm run bench:inference`: tokens/s and time to first token at concurrency 1, 4 and 8 through the
// REST API (streamed, as clients use it), then the same workload on node-llama-cpp directly, and
// the ratio between them (our overhead). Uses the built-in tiny model and its own database.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { startEmbeddedDatabase } from "../../services/store/launcher.js";
import { connectDatabase } from "../../services/store/mongo.js";
import { startServerProcess } from "../../test/support/server-process.js";

const LEVELS = [1, 4, 8];
const TOKENS = Number(process.env.BENCH_TOKENS ?? 128);
const THREADS = Number(process.env.ENGINE_THREADS || Math.max(1, cpus().length - 1));

const dataDir = await mkdtemp(join(tmpdir(), "srl-bench-"));
const database = await startEmbeddedDatabase({ dataDir, log: () => {} });
const server = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: database.uri, MONGODB_DB: "bench", ENGINE_THREADS: String(THREADS), ENGINE_SEQUENCES: "8", LOG_LEVEL: "warn" });
try {
  const db = await connectDatabase(database.uri, "bench");
  const key = (await new ApiKeys(db.db).create("bench")).key;
  await db.close();

  const stream = async (index: number) => {
    const started = performance.now();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: `Story number ${index}` }], temperature: 0.8, seed: index, max_tokens: TOKENS, ignore_eos: true, stream: true, stream_options: { include_usage: true } }),
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    let first = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
      if (!first && text.includes('"content":"') && /"token_ids"|"content":"[^"]/.test(text.split("\n\n").slice(1).join(""))) first = performance.now() - started;
    }
    const usage = /"completion_tokens":(\d+)/.exec(text.slice(text.lastIndexOf('"usage":{')));
    return { tokens: Number(usage?.[1] ?? 0), first };
  };

  await stream(0); // load the model and a context
  const api: Record<number, { tokensPerSecond: number; ttftMs: number }> = {};
  for (const level of LEVELS) {
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: level }, (_, i) => stream(i + 1)));
    const seconds = (performance.now() - started) / 1000;
    api[level] = { tokensPerSecond: runs.reduce((a, r) => a + r.tokens, 0) / seconds, ttftMs: runs.reduce((a, r) => a + r.first, 0) / runs.length };
  }

  // Prefix cache: the same long prompt twice in one cache_salt, then once in another salt.
  const longPrompt = "Context: " + "the quick brown fox jumps over the lazy dog. ".repeat(40);
  const timeToFirstToken = async (salt: string) => {
    const started = performance.now();
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: longPrompt }], max_tokens: 1, temperature: 0, cache_salt: salt }),
    });
    const body = (await response.json()) as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
    return { ms: performance.now() - started, prompt: body.usage.prompt_tokens, cached: body.usage.prompt_tokens_details.cached_tokens };
  };
  const cold = await timeToFirstToken("bench-a");
  const warm = await timeToFirstToken("bench-a");
  const otherSalt = await timeToFirstToken("bench-b");

  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", join(import.meta.dirname, "direct-llama.ts"), join(dataDir, "models", "tiny-chat.gguf"), String(THREADS), String(TOKENS), ...LEVELS.map(String)], {
    env: { ...process.env, UV_THREADPOOL_SIZE: "1" },
  });
  const direct = JSON.parse(stdout.trim().split("\n").pop() as string) as Record<number, { tokensPerSecond: number; ttftMs: number }>;

  console.log(`inference benchmark: tiny-chat, ${TOKENS} tokens per request, ${THREADS} llama.cpp threads, ${cpus().length} cores`);
  console.log("concurrency | API tok/s | API TTFT ms | direct tok/s | direct TTFT ms | API/direct");
  for (const level of LEVELS) {
    const a = api[level] as { tokensPerSecond: number; ttftMs: number };
    const d = direct[level] as { tokensPerSecond: number; ttftMs: number };
    console.log(
      `${String(level).padStart(11)} | ${a.tokensPerSecond.toFixed(0).padStart(9)} | ${a.ttftMs.toFixed(1).padStart(11)} | ${d.tokensPerSecond.toFixed(0).padStart(12)} | ${d.ttftMs.toFixed(1).padStart(14)} | ${(a.tokensPerSecond / d.tokensPerSecond).toFixed(2).padStart(10)}`,
    );
  }
  console.log(`prefix cache (${cold.prompt}-token prompt, one token out): first ${cold.ms.toFixed(1)} ms (cached ${cold.cached}), again ${warm.ms.toFixed(1)} ms (cached ${warm.cached}), other cache_salt ${otherSalt.ms.toFixed(1)} ms (cached ${otherSalt.cached}); speed-up x${(cold.ms / warm.ms).toFixed(2)}`);
} finally {
  await server.stop();
  await database.stop();
  await rm(dataDir, { recursive: true, force: true });
}
