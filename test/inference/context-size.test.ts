// Each base model's context per sequence is its GGUF's trained length (SmolLM2-135M-Instruct:
// 8192; the built-in tiny models: 2048), capped by ENGINE_CONTEXT_SIZE and by the memory budget
// for contexts; what the engine tells the gateway (describeModel) is what generation enforces.
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../services/core/errors.js";
import { createLogger } from "../../services/core/logger.js";
import { EngineClient } from "../../services/inference/engine/client.js";
import type { BaseModelRef, EngineSettings, GenerateRequest } from "../../services/inference/engine/protocol.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const SMOLLM2 = resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const present = existsSync(SMOLLM2);
if (!present) console.warn(`context-size tests skipped: ${SMOLLM2} is missing (the install step, scripts/fetch-test-models.sh, fetches it)`);

/** `count` words SmolLM2 tokenizes as one token each (the tiny models: about 3.4 tokens a word). */
const words = (count: number) => Array.from({ length: count }, (_, i) => ["apple", "river", "stone", "cloud", "green", "table", "light", "paper"][i % 8]).join(" ");

interface Completion {
  status: number;
  body: { usage?: { prompt_tokens: number; completion_tokens: number }; choices?: { finish_reason: string }[]; error?: { message: string } };
}

async function chat(isolated: IsolatedServer, body: Record<string, unknown>): Promise<Completion> {
  const res = await fetch(`${isolated.server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" },
    body: JSON.stringify({ temperature: 0, ...body }),
  });
  return { status: res.status, body: (await res.json()) as Completion["body"] };
}

describe.skipIf(!present)("context size per base model (servers)", () => {
  let defaults: IsolatedServer;
  let capped: IsolatedServer;

  beforeAll(async () => {
    [defaults, capped] = await Promise.all([
      startIsolatedServer({ name: "context-default", entity: "context", env: { BASE_MODELS: `smollm2=${SMOLLM2}` } }),
      startIsolatedServer({ name: "context-capped", entity: "context", env: { BASE_MODELS: `smollm2=${SMOLLM2}`, ENGINE_CONTEXT_SIZE: "1024" } }),
    ]);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([defaults?.stop(), capped?.stop()]);
  });

  it("answers a ~4,000-token prompt on SmolLM2 (trained context 8192) with default settings", async () => {
    const res = await chat(defaults, { model: "smollm2", messages: [{ role: "user", content: words(3970) }], max_tokens: 2 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.usage?.prompt_tokens).toBeGreaterThan(3950);
    expect(res.body.usage?.prompt_tokens).toBeLessThan(4100);
  }, 240_000);

  it("reports each model's context as max_model_len in the OpenAI listing", async () => {
    const listed = async (server: IsolatedServer) => {
      const client = new OpenAI({ baseURL: `${server.server.url}/v1`, apiKey: server.key, maxRetries: 0 });
      const models = (await client.models.list()).data as (OpenAI.Models.Model & { max_model_len: number | null })[];
      return Object.fromEntries(models.map((m) => [m.id, m.max_model_len]));
    };
    expect(await listed(defaults)).toMatchObject({ smollm2: 8192, "tiny-chat": 2048 });
    expect(await listed(capped)).toMatchObject({ smollm2: 1024, "tiny-chat": 1024 });
  }, 120_000);

  it("refuses tools on SmolLM2, whose template does not render them, instead of dropping them", async () => {
    const client = new OpenAI({ baseURL: `${defaults.server.url}/v1`, apiKey: defaults.key, maxRetries: 0 });
    const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const error = await client.chat.completions.create({ model: "smollm2", messages: [{ role: "user", content: "Weather in Paris?" }], tools, max_tokens: 4 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/tools: the chat template of smollm2 does not render tools/);
    // With a template that renders them, the same request is served.
    const hermes = "{% if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n";
    const ok = await client.chat.completions.create({ model: "smollm2", messages: [{ role: "user", content: "Weather in Paris?" }], tools, max_tokens: 4, chat_template: hermes } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(ok.usage?.prompt_tokens).toBeGreaterThan(20);
  }, 120_000);

  it("keeps the tiny built-in model at its own 2048: prompt plus completion fill exactly that", async () => {
    const refused = await chat(defaults, { model: "tiny-chat", messages: [{ role: "user", content: words(700) }], max_tokens: 2 });
    expect(refused.status).toBe(400);
    expect(refused.body.error?.message).toMatch(/^the prompt has \d+ tokens; this model's context holds 2048 here/);
    const filled = await chat(defaults, { model: "tiny-chat", messages: [{ role: "user", content: words(560) }], ignore_eos: true });
    expect(filled.status, JSON.stringify(filled.body)).toBe(200);
    expect(filled.body.choices?.[0]?.finish_reason).toBe("length");
    expect((filled.body.usage?.prompt_tokens ?? 0) + (filled.body.usage?.completion_tokens ?? 0)).toBe(2048);
  }, 120_000);

  it("with ENGINE_CONTEXT_SIZE=1024 refuses a 1,500-token prompt with a 400 naming the size", async () => {
    const res = await chat(capped, { model: "smollm2", messages: [{ role: "user", content: words(1500) }], max_tokens: 2 });
    expect(res.status).toBe(400);
    expect(res.body.error?.message).toMatch(/^the prompt has 15\d\d tokens; this model's context holds 1024 here/);
  }, 120_000);

  it("with ENGINE_CONTEXT_SIZE=1024, truncate_prompt_tokens=-1 keeps the prompt's last 1023 tokens", async () => {
    const res = await chat(capped, { model: "smollm2", messages: [{ role: "user", content: words(1500) }], truncate_prompt_tokens: -1, max_tokens: 5 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.usage).toMatchObject({ prompt_tokens: 1023, completion_tokens: 1 });
  }, 120_000);

  it("with ENGINE_CONTEXT_SIZE=1024 ends a completion where prompt plus completion reach 1024", async () => {
    const res = await chat(capped, { model: "smollm2", messages: [{ role: "user", content: words(960) }], ignore_eos: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.choices?.[0]?.finish_reason).toBe("length");
    expect((res.body.usage?.prompt_tokens ?? 0) + (res.body.usage?.completion_tokens ?? 0)).toBe(1024);
  }, 120_000);
});

describe.skipIf(!present)("EngineClient.describeModel", () => {
  let dataDir: string;
  const clients: EngineClient[] = [];
  const smollm2: BaseModelRef = { name: "smollm2", source: SMOLLM2, scheduling: "fcfs" };

  const client = (settings: Partial<EngineSettings>) => {
    const engine = new EngineClient(
      {
        threads: 1,
        sequences: 8,
        contextSize: 0,
        maxQueue: 8,
        maxQueuePerEntity: 0,
        maxSequencesPerEntity: 0,
        maxContexts: 2,
        contextMemoryBytes: Math.floor(totalmem() / 4),
        logLevel: "warn",
        dataDir,
        hubTimeoutMs: 3_000,
        binary: "auto",
        faults: [],
        ...settings,
      },
      createLogger({ level: "error" }),
    );
    clients.push(engine);
    return engine;
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "srl-describe-"));
  });
  afterAll(async () => {
    await Promise.all(clients.map((engine) => engine.stop()));
    await rm(dataDir, { recursive: true, force: true });
  });

  it("gives each model's trained length with the defaults, and null for a file that is not here", async () => {
    const engine = client({});
    expect(await engine.describeModel(smollm2)).toEqual({ maxModelLen: 8192 });
    expect(await engine.describeModel({ name: "tiny-chat", source: "builtin:tiny-chat", scheduling: "fcfs" })).toEqual({ maxModelLen: 2048 });
    expect(await engine.describeModel({ name: "gone", source: join(dataDir, "gone.gguf"), scheduling: "fcfs" })).toEqual({ maxModelLen: null });
    // A file that is no GGUF: null, and the engine process lives on.
    await writeFile(join(dataDir, "junk.gguf"), "not a gguf file");
    expect(await engine.describeModel({ name: "junk", source: join(dataDir, "junk.gguf"), scheduling: "fcfs" })).toEqual({ maxModelLen: null });
    expect(await engine.describeModel(smollm2)).toEqual({ maxModelLen: 8192 });
  }, 60_000);

  it("never downloads: an hf: model not fetched yet is null, and stays absent", async () => {
    const engine = client({});
    const started = performance.now();
    expect(await engine.describeModel({ name: "remote", source: "hf:someone/some-model-GGUF/model.Q8_0.gguf", scheduling: "fcfs" })).toEqual({ maxModelLen: null });
    expect(performance.now() - started).toBeLessThan(10_000);
    const models = await readdir(join(dataDir, "models")).catch(() => []);
    expect(models.filter((file) => file.includes("model.Q8_0"))).toEqual([]);
  }, 60_000);

  it("gives the ENGINE_CONTEXT_SIZE cap when one is set", async () => {
    expect(await client({ contextSize: 1024 }).describeModel(smollm2)).toEqual({ maxModelLen: 1024 });
    // A cap above the trained length does not stretch the model.
    expect(await client({ contextSize: 16_384 }).describeModel(smollm2)).toEqual({ maxModelLen: 8192 });
  }, 60_000);

  it("gives the largest size whose context fits the memory budget, and generation enforces that same size", async () => {
    // 8 sequences of 8192 tokens on SmolLM2 take about 1.5 GB by llama.cpp's estimate; 480 MB holds 8 x 2048 (463 MB), not 8 x 2304 (503 MB).
    const engine = client({ contextMemoryBytes: 480 * 2 ** 20 });
    const { maxModelLen } = await engine.describeModel(smollm2);
    expect(maxModelLen).toBe(2048);
    const refused = await collect(engine, request(smollm2, words(2100), 2));
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).kind).toBe("bad_request");
    expect((refused as ApiError).message).toMatch(/this model's context holds 2048 here/);
    const usage = await collect(engine, request(smollm2, words(1990), null));
    expect(usage).not.toBeInstanceOf(ApiError);
    const { promptTokens, completionTokens } = usage as { promptTokens: number; completionTokens: number };
    expect(promptTokens + completionTokens).toBe(2048);
  }, 240_000);
});

/** The usage of a generation, or the ApiError it failed with. */
async function collect(engine: EngineClient, request: Omit<GenerateRequest, "id">): Promise<{ promptTokens: number; completionTokens: number } | ApiError> {
  try {
    for await (const event of engine.generate(request, new AbortController().signal)) if (event.type === "done") return event.usage;
    throw new Error("the generation ended without done");
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
}

/** A greedy chat request that ignores end of sequence (so it runs to max_tokens or the context's end). */
function request(base: BaseModelRef, content: string, maxTokens: number | null): Omit<GenerateRequest, "id"> {
  return {
    base,
    tenant: "test",
    adapterPath: null,
    priority: 0,
    rawPrompt: null,
    messages: [{ role: "user", content }],
    tools: null,
    documents: null,
    chatTemplate: null,
    chatTemplateKwargs: {},
    addGenerationPrompt: true,
    continueFinalMessage: false,
    echo: false,
    addSpecialTokens: false,
    truncatePromptTokens: null,
    cacheSalt: null,
    n: 1,
    beamSearch: null,
    maxTokens,
    minTokens: 0,
    sampling: { temperature: 0, topP: null, topK: null, minP: null, seed: null, frequencyPenalty: 0, presencePenalty: 0, repetitionPenalty: null },
    logitBias: {},
    badWords: [],
    allowedTokenIds: null,
    stop: [],
    stopTokenIds: [],
    includeStopStrInOutput: false,
    ignoreEos: true,
    skipSpecialTokens: true,
    spacesBetweenSpecialTokens: true,
    grammar: null,
    repetitionDetection: null,
    logprobs: false,
    topLogprobs: 0,
    promptLogprobs: null,
    returnTokensAsTokenIds: false,
    returnTokenIds: false,
  };
}
