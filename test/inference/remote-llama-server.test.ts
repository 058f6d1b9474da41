// Remote engines on real llama-server processes, built from the llama.cpp source node-llama-cpp
// ships (built and checked by the install, scripts/build-llama-server.sh): a base model served by two
// replicas this service runs gives what the embedded engine gives, a checkpoint trained here is
// served there with the greedy output it has locally, and with two replicas run by someone else a
// replica killed mid-run sends new requests to the other.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../services/core/child-process.js";
import { installedLlamaServer } from "../../services/inference/engine/llama-binaries.js";
import { ensureBuiltInModel } from "../../services/weights/tiny-model.js";
import { followJob } from "../support/art-client.js";
import { rest as restAt } from "../support/clients.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";
import { listProcesses } from "../support/processes.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const entity = "remote";
let llamaServer = "";
let isolated: IsolatedServer;
/** A second server on the same database with no ENGINES: it serves the same names on the embedded engine. */
let embedded: ServerProcess;
let embeddedDir = "";
let externals: { port: number; child: ChildProcess }[] = [];
let modelFile = "";

async function startExternal(port: number): Promise<ChildProcess> {
  const child = spawn(llamaServer, ["-m", modelFile, "--host", "127.0.0.1", "--port", String(port), "-np", "4", "-t", "1", "--no-webui", "--metrics"], { stdio: "ignore" });
  for (let i = 0; i < 300; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) return child;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`llama-server on ${port} did not start`);
}

beforeAll(async () => {
  // Built and checked by the install (scripts/install.sh), never here.
  llamaServer = installedLlamaServer();
  embeddedDir = await mkdtemp(join(tmpdir(), "srl-remote-embedded-"));
  modelFile = await ensureBuiltInModel("tiny-chat", embeddedDir);
  const ports = [await freePort(), await freePort()];
  externals = await Promise.all(ports.map(async (port) => ({ port, child: await startExternal(port) })));
  const engines = {
    "tiny-remote": { kind: "llama-server", launch: { count: 2, binary: llamaServer, threads: 1, slots: 4 }, healthIntervalMs: 250 },
    "tiny-external": { kind: "llama-server", replicas: ports.map((port) => `http://127.0.0.1:${port}`), healthIntervalMs: 250 },
  };
  const baseModels = "tiny-remote=builtin:tiny-chat,tiny-external=builtin:tiny-chat";
  isolated = await startIsolatedServer({ name: "remote", entity, env: { BASE_MODELS: baseModels, ENGINES: JSON.stringify(engines), WORKER_LEASE_MS: "3000" } });
  embedded = await startServerProcess(
    // A second server on the same database shares its blob store (checkpoints' adapters).
    { DATA_DIR: embeddedDir, MONGODB_URI: isolated.database.uri, MONGODB_DB: "srl_remote", BLOB_STORE_URL: `file://${join(isolated.dataDir, "blobs")}`, ENGINE_THREADS: "1", BASE_MODELS: baseModels, TRAINING_WORKER: "0" },
    "embedded",
  );
}, 1_200_000);

afterAll(async () => {
  await embedded?.stop();
  await isolated?.stop();
  for (const { child } of externals) child.kill("SIGKILL");
  await rm(embeddedDir, { recursive: true, force: true });
});

const rest = (method: string, path: string, options: Parameters<typeof restAt>[2] = {}) => restAt(method, path, { key: isolated.key, base: isolated.server.url, ...options });
const sdk = (server: { url: string }) => new OpenAI({ apiKey: isolated.key, baseURL: `${server.url}/v1`, maxRetries: 0 });

async function greedy(server: { url: string }, model: string, content: string, maxTokens = 24) {
  const completion = await sdk(server).chat.completions.create({ model, messages: [{ role: "user", content }], temperature: 0, max_tokens: maxTokens });
  return { text: completion.choices[0]?.message.content ?? "", usage: completion.usage, finish: completion.choices[0]?.finish_reason };
}

describe("llama-server replicas this service runs", () => {
  it("answer unary and streamed completions as the embedded engine does", async () => {
    const prompts = ["Hello there, who are you?", "Write a short list of fruits.", "¿Dónde está la estación? 日本語"];
    for (const prompt of prompts) {
      const local = await greedy(isolated.server, "tiny-chat", prompt);
      const remote = await greedy(isolated.server, "tiny-remote", prompt);
      expect(remote.text).toBe(local.text);
      expect(remote.usage?.prompt_tokens).toBe(local.usage?.prompt_tokens);
      expect(remote.usage?.completion_tokens).toBe(local.usage?.completion_tokens);
      expect(remote.finish).toBe(local.finish);
    }
    // Streamed, through the SDK: the deltas add up to the unary text, usage comes last.
    const stream = await sdk(isolated.server).chat.completions.create({
      model: "tiny-remote",
      messages: [{ role: "user", content: prompts[0] as string }],
      temperature: 0,
      max_tokens: 24,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe((await greedy(isolated.server, "tiny-chat", prompts[0] as string)).text);
    expect(usage?.completion_tokens).toBe(24);
  });

  it("applies stop strings, n and seeds, and legacy completions the same way", async () => {
    const local = await greedy(isolated.server, "tiny-chat", "Count with me", 32);
    const stop = local.text.slice(6, 9);
    const cut = await sdk(isolated.server).chat.completions.create({ model: "tiny-remote", messages: [{ role: "user", content: "Count with me" }], temperature: 0, max_tokens: 32, stop: [stop] });
    expect(cut.choices[0]?.message.content).toBe(local.text.slice(0, local.text.indexOf(stop)));
    expect(cut.choices[0]).toMatchObject({ finish_reason: "stop", stop_reason: stop });

    const sampled = await sdk(isolated.server).chat.completions.create({ model: "tiny-remote", messages: [{ role: "user", content: "Say anything" }], temperature: 1, seed: 7, n: 2, max_tokens: 16 });
    expect(sampled.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(sampled.choices[0]?.message.content).not.toBe(sampled.choices[1]?.message.content);
    const again = await sdk(isolated.server).chat.completions.create({ model: "tiny-remote", messages: [{ role: "user", content: "Say anything" }], temperature: 1, seed: 7, n: 2, max_tokens: 16 });
    expect(again.choices.map((c) => c.message.content)).toEqual(sampled.choices.map((c) => c.message.content));

    const legacyLocal = await sdk(isolated.server).completions.create({ model: "tiny-chat", prompt: ["Once upon a time", "The weather"], temperature: 0, max_tokens: 12 });
    const legacyRemote = await sdk(isolated.server).completions.create({ model: "tiny-remote", prompt: ["Once upon a time", "The weather"], temperature: 0, max_tokens: 12 });
    expect(legacyRemote.choices.map((c) => c.text)).toEqual(legacyLocal.choices.map((c) => c.text));
  });

  it("refuses with a 400 naming the option what llama-server cannot honour", async () => {
    for (const [field, extra] of [
      ["logprobs", { logprobs: true }],
      ["return_token_ids", { return_token_ids: true }],
      ["min_tokens", { min_tokens: 3 }],
      ["bad_words", { bad_words: ["x"] }],
    ] as const) {
      const res = await rest("POST", "/v1/chat/completions", { body: { model: "tiny-remote", messages: [{ role: "user", content: "hi" }], max_tokens: 4, ...extra } });
      expect(res.status, field).toBe(400);
      expect((res.body as { error: { message: string } }).error.message).toContain(`${field}: not supported by the llama-server replicas serving tiny-remote`);
    }
  });

  it("serves a checkpoint trained here with the greedy output the embedded engine gives it", async () => {
    const model = (await rest("POST", "/v1/preview/models", { body: { project: "remote", name: "sft", base_model: "tiny-remote" } })).body as { id: string };
    const name = `wandb-artifact:///${entity}/remote/sft`;
    const pairs = [
      ["2+2?", "four"],
      ["Capital of France?", "Paris"],
    ];
    const lines = Array.from({ length: 24 }, (_, i) => pairs[i % 2] as string[]).map(([q, a]) => JSON.stringify({ messages: [{ role: "user", content: q }, { role: "assistant", content: a }] }));
    const upload = await rest("POST", "/v1/preview/artifacts?project=remote&name=sft-data&type=dataset&filename=train.jsonl", { rawBody: lines.join("\n") + "\n", headers: { "content-type": "application/jsonl" } });
    expect(upload.status, upload.text).toBe(200);
    const job = await rest("POST", "/v1/preview/sft-training-jobs", { body: { model_id: model.id, training_data_url: (upload.body as { url: string }).url, config: { batch_size: 2, learning_rate: 0.01 } } });
    expect(job.status, job.text).toBe(200);
    const outcome = await followJob(isolated.key, (job.body as { id: string }).id, model.id, isolated.server.url);
    expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");

    for (const [question, answer] of pairs) {
      const remote = await greedy(isolated.server, name, question as string, 8);
      const local = await greedy(embedded, name, question as string, 8);
      expect(remote.text).toMatch(new RegExp(`^${answer}`));
      expect(remote.text).toBe(local.text);
      // The trained answer ends its turn: the end token is neither output nor counted, on both.
      expect(remote.finish).toBe("stop");
      expect([remote.finish, remote.usage?.completion_tokens]).toEqual([local.finish, local.usage?.completion_tokens]);
    }
    // Step 0 is the base model on the replicas too, and a replica holding the adapter still serves the base.
    expect((await greedy(isolated.server, `${name}:step0`, "2+2?", 8)).text).toBe((await greedy(embedded, "tiny-remote", "2+2?", 8)).text);
    expect((await greedy(isolated.server, "tiny-remote", "2+2?", 8)).text).toBe((await greedy(isolated.server, "tiny-chat", "2+2?", 8)).text);
  }, 300_000);

  it("starts a replica again after it dies, with the adapters it held, while the other serves", async () => {
    const launched = () => llamaServers(isolated.dataDir);
    const [victim] = launched();
    expect(victim, "a llama-server launched by the service").toBeDefined();
    process.kill(victim!.pid, "SIGKILL");
    // Meanwhile every request is answered (by the other replica, or after the restart).
    const name = `wandb-artifact:///${entity}/remote/sft`;
    expect((await greedy(isolated.server, name, "2+2?", 8)).text).toMatch(/^four/);
    for (let i = 0; i < 4; i++) expect((await greedy(isolated.server, "tiny-remote", "hi", 4)).text.length).toBeGreaterThan(0);
    const deadline = Date.now() + 60_000;
    while (!launched().some((p) => p.port === victim!.port && p.pid !== victim!.pid)) {
      if (Date.now() > deadline) throw new Error(`llama-server on port ${victim!.port} was not started again`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const again = launched().find((p) => p.port === victim!.port) as { args: string[] };
    expect(again.args.filter((arg) => arg === "--lora").length).toBe(victim!.args.filter((arg) => arg === "--lora").length);
  }, 120_000);
});

/** llama-server processes whose model lives under `dir` (those a server with that DATA_DIR started). */
function llamaServers(dir: string): { pid: number; port: string; args: string[] }[] {
  return listProcesses("llama-server", dir).map(({ pid, args }) => ({ pid, args, port: args[args.indexOf("--port") + 1] as string }));
}

describe("llama-server replicas run elsewhere", () => {
  /** Tokens each external replica has generated so far (its Prometheus counter). */
  async function predicted(port: number): Promise<number> {
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => "");
    return Number(/^llamacpp:tokens_predicted_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
  }

  it("spreads requests over both, and sends new requests to the other when one is killed mid-run", async () => {
    const [first, second] = externals as [{ port: number; child: ChildProcess }, { port: number; child: ChildProcess }];
    const before = await Promise.all([predicted(first.port), predicted(second.port)]);
    const ask = (maxTokens: number) => sdk(isolated.server).chat.completions.create({ model: "tiny-external", messages: [{ role: "user", content: "Tell me a long story." }], temperature: 0, max_tokens: maxTokens, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    await Promise.all(Array.from({ length: 6 }, () => ask(16)));
    const after = await Promise.all([predicted(first.port), predicted(second.port)]);
    // Least-loaded routing: six concurrent requests land on both replicas.
    expect(after[0]! - before[0]!).toBeGreaterThan(0);
    expect(after[1]! - before[1]!).toBeGreaterThan(0);

    // Long streams in flight on both (each has sent text: a loaded machine can take longer than
    // any fixed wait to route them), then one replica dies.
    const streaming: Promise<void>[] = [];
    const streams = Array.from({ length: 4 }, async () => {
      let started = () => {};
      streaming.push(new Promise<void>((resolve) => (started = resolve)));
      try {
        const stream = await sdk(isolated.server).chat.completions.create({ model: "tiny-external", messages: [{ role: "user", content: "Go on." }], temperature: 0, max_tokens: 2000, ignore_eos: true, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming);
        let tokens = 0;
        for await (const chunk of stream) {
          tokens += chunk.choices[0]?.delta.content ? 1 : 0;
          if (tokens > 0) started();
        }
        return { ok: true as const, tokens };
      } catch (error) {
        return { ok: false as const, message: error instanceof Error ? error.message : String(error) };
      } finally {
        started();
      }
    });
    await Promise.all(streaming);
    first.child.kill("SIGKILL");
    const outcomes = await Promise.all(streams);
    // The streams on the killed replica end with an error naming it (never retried half-sent);
    // the others run to their end.
    const failed = outcomes.filter((o) => !o.ok);
    expect(failed.length, JSON.stringify(outcomes)).toBeGreaterThan(0);
    for (const outcome of failed) expect(outcome.message).toContain(`replica http://127.0.0.1:${first.port} of tiny-external failed during the completion`);
    expect(outcomes.filter((o) => o.ok).length, JSON.stringify(outcomes)).toBeGreaterThan(0);

    // Every new request is answered, by the survivor.
    const survivorBefore = await predicted(second.port);
    const answers = await Promise.all(Array.from({ length: 6 }, () => ask(8)));
    expect(answers.every((a) => a.choices[0]?.message.content)).toBe(true);
    expect((await predicted(second.port)) - survivorBefore).toBeGreaterThanOrEqual(48);

    // Back on its port, the replica gets requests again once its health check passes.
    first.child = await startExternal(first.port);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await Promise.all(Array.from({ length: 6 }, () => ask(8)));
    expect(await predicted(first.port)).toBeGreaterThan(0);
  }, 300_000);

  it("answers 503 naming the replicas when none is up, and no request crashes the service", async () => {
    for (const external of externals) external.child.kill("SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 600));
    const res = await rest("POST", "/v1/chat/completions", { body: { model: "tiny-external", messages: [{ role: "user", content: "hi" }], max_tokens: 4 } });
    expect(res.status).toBe(503);
    const message = (res.body as { error: { message: string } }).error.message;
    for (const { port } of externals) expect(message).toContain(`127.0.0.1:${port}`);
    // The embedded and launched engines are unaffected.
    expect((await greedy(isolated.server, "tiny-remote", "hi", 4)).text.length).toBeGreaterThan(0);
  });
});
