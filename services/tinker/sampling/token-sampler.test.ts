// Tinker's token sampling on the built-in tiny model through a real engine process (its own, on
// the test server's database and data directory), checked against the test server's
// /v1/completions on the same tokens: greedy and seeded draws, num_samples (also past what one
// engine request runs), raw log-probabilities and their top-k, prompt logprobs as
// compute_logprobs asks for them, each kind of stop, max_tokens, the entity's limits, and
// `tinker://{run}/sampler_weights/{name}` on every route.
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sharedBlobStore } from "../../../test/support/blob-store.js";
import { rest } from "../../../test/support/clients.js";
import { TEST_DATABASE_TIMEOUT_MS } from "../../../test/support/db-timeout.js";
import { createKey, uniqueEntity } from "../../../test/support/keys.js";
import { ApiError } from "../../core/errors.js";
import { createLogger } from "../../core/logger.js";
import { EngineClient, EngineSet, type InferenceEngine, ModelResolver } from "../../inference/index.js";
import { AdapterFiles, BaseModelCatalog, Checkpoints, ModelRegistry, Runs } from "../../models/index.js";
import { connectDatabase, type Database } from "../../store/index.js";
import { makeRandomLora } from "../../weights/lora.js";
import { type TokenSampleRequest, type TokenSampleResult, TokenSampler } from "./token-sampler.js";

const BASE = "tiny-chat";

let database: Database;
let engine: EngineClient;
let resolver: ModelResolver;
let checkpoints: Checkpoints;
let scratch = "";
let entity = "";
let key = "";
/** The tiny model's prompt for most tests, and its end-of-sequence token (<|im_end|>). */
let prompt: number[] = [];
let eos = -1;
let imStart = -1;
let contextLength = 0;

const limits = (maxChoices: number, maxPromptBytes = 1 << 20) => ({ maxPromptBytes, maxChoices: () => maxChoices });
const sampler = (options: { engine?: InferenceEngine; maxChoices?: number; maxPromptBytes?: number } = {}) =>
  new TokenSampler({ engine: options.engine ?? new EngineSet(engine, new Map()), resolver, limits: limits(options.maxChoices ?? 8, options.maxPromptBytes) });

/** compute_logprobs' defaults, greedy by default here. */
function request(overrides: Partial<TokenSampleRequest> = {}): TokenSampleRequest {
  return {
    entity,
    model: BASE,
    prompt,
    numSamples: 1,
    maxTokens: 8,
    temperature: 0,
    topK: -1,
    topP: 1,
    seed: null,
    stop: { kind: "eos" },
    promptLogprobs: false,
    topkPromptLogprobs: 0,
    topkSampleLogprobs: 0,
    promptLogprobsLastN: null,
    signal: new AbortController().signal,
    ...overrides,
  };
}

interface LegacyChoice {
  text: string;
  token_ids: number[];
  prompt_token_ids?: number[];
  finish_reason: string;
  logprobs: { tokens: string[]; token_logprobs: number[]; top_logprobs: Record<string, number>[] } | null;
  prompt_logprobs?: (Record<string, { logprob: number; rank: number; decoded_token: string }> | null)[];
}

async function completions(body: Record<string, unknown>, as = key): Promise<LegacyChoice[]> {
  const res = await rest("POST", "/v1/completions", { key: as, body: { model: BASE, return_token_ids: true, ...body } });
  expect(res.status, res.text).toBe(200);
  return (res.body as { choices: LegacyChoice[] }).choices;
}

/**
 * Log-probabilities of one token computed twice: equal up to the float noise of llama.cpp's kernels,
 * which differ between a one-token decode and a batched prefill, and with what else is batched
 * (measured: up to 3e-4 on the tiny model).
 */
function expectClose(actual: number | null | undefined, expected: number | null | undefined, what = ""): void {
  expect(typeof actual, what).toBe("number");
  expect(typeof expected, what).toBe("number");
  expect(Math.abs((actual as number) - (expected as number)), `${what}: ${actual} vs ${expected}`).toBeLessThan(2e-3);
}

async function refusal(work: Promise<unknown>): Promise<ApiError> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

/** The real engine with a logit bias on every request (the tiny model's draws never end by themselves). */
function biased(bias: Record<number, number>): InferenceEngine {
  return {
    generate: (plan, signal) => engine.generate({ ...plan, logitBias: Object.fromEntries(Object.entries(bias).map(([id, value]) => [id, value])) }, signal),
    describeModel: (base) => engine.describeModel(base),
    stop: async () => {},
  };
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "srl-token-sampler-"));
  entity = uniqueEntity("tinker-sample");
  key = await createKey(entity);
  database = await connectDatabase(inject("mongoUri"), inject("mongoDb"), { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  const catalog = new BaseModelCatalog([]);
  checkpoints = new Checkpoints(database.db, sharedBlobStore());
  const registry = new ModelRegistry(database.db, catalog, new Runs(database.db), checkpoints);
  resolver = new ModelResolver({ catalog, registry, checkpoints, adapters: new AdapterFiles(scratch, checkpoints) });
  engine = new EngineClient(
    {
      threads: 1,
      sequences: 8,
      contextSize: 0,
      maxQueue: 64,
      maxQueuePerEntity: 0,
      maxSequencesPerEntity: 0,
      maxContexts: 4,
      contextMemoryBytes: Math.floor(totalmem() / 4),
      logLevel: "warn",
      dataDir: inject("dataDir"),
      hubTimeoutMs: 3_000,
      binary: "auto",
      faults: [],
    },
    createLogger({ level: "error" }),
  );
  const [tokenized] = await completions({ prompt: "Once upon a time, the little robot", max_tokens: 1, add_special_tokens: false });
  prompt = tokenized?.prompt_token_ids ?? [];
  const [end] = await completions({ prompt: "<|im_end|>", max_tokens: 1, add_special_tokens: false });
  eos = end?.prompt_token_ids?.[0] ?? -1;
  const [start] = await completions({ prompt: "<|im_start|>", max_tokens: 1, add_special_tokens: false });
  imStart = start?.prompt_token_ids?.[0] ?? -1;
  expect(start?.prompt_token_ids).toHaveLength(1);
  expect(prompt.length).toBeGreaterThan(4);
  expect(end?.prompt_token_ids).toHaveLength(1);
  contextLength = (await engine.describeModel({ name: BASE, source: `builtin:${BASE}`, scheduling: "fcfs" })).maxModelLen ?? 0;
  expect(contextLength).toBeGreaterThan(512);
}, 120_000);

afterAll(async () => {
  await engine?.stop();
  await database?.close();
  await rm(scratch, { recursive: true, force: true });
});

describe("TokenSampler on the tiny model", () => {
  it("samples greedily and deterministically, with the tokens, logprobs and top-k of /v1/completions", async () => {
    const asked = request({ numSamples: 3, maxTokens: 10, stop: { kind: "none" }, topkSampleLogprobs: 3 });
    const first = await sampler().sample(asked);
    const again = await sampler().sample(asked);
    expect(first.sequences).toHaveLength(3);
    expect(again.sequences).toEqual(first.sequences);
    for (const sequence of first.sequences) expect(sequence).toEqual(first.sequences[0]);
    const greedy = first.sequences[0]!;
    expect(greedy.tokens).toHaveLength(10);
    expect(greedy.stopReason).toBe("length");
    expect(greedy.logprobs).toHaveLength(10);
    expect(first.promptLogprobs).toBeNull();
    expect(first.topkPromptLogprobs).toBeNull();
    // Greedy: each token is its step's most likely one, the top-k sorted from the most likely.
    greedy.tokens.forEach((token, i) => {
      expect(greedy.topk?.ids[i]).toHaveLength(3);
      expect(greedy.topk?.ids[i]?.[0]).toBe(token);
      expect(greedy.topk?.logprobs[i]?.[0]).toBeCloseTo(greedy.logprobs[i]!, 6);
      const row = greedy.topk?.logprobs[i] ?? [];
      expect([...row].sort((a, b) => b - a)).toEqual(row);
      expect(greedy.logprobs[i]).toBeLessThan(0);
    });

    const [legacy] = await completions({ prompt, max_tokens: 10, temperature: 0, ignore_eos: true, logprobs: 3, return_tokens_as_token_ids: true });
    expect(greedy.tokens).toEqual(legacy?.token_ids);
    greedy.logprobs.forEach((logprob, i) => expectClose(logprob, legacy?.logprobs?.token_logprobs[i], `token ${i}`));
    greedy.topk?.ids.forEach((ids, i) => {
      const listed = legacy?.logprobs?.top_logprobs[i] ?? {};
      ids.forEach((id, j) => expectClose(listed[`token_id:${id}`], greedy.topk?.logprobs[i]?.[j], `position ${i}, token ${id}`));
    });
  });

  it("draws seeded samples: the same seed the same samples, whatever the engine runs at once, as /v1/completions draws them", async () => {
    const asked = request({ numSamples: 5, maxTokens: 8, temperature: 0.9, seed: 1234, stop: { kind: "none" } });
    const one = await sampler().sample(asked);
    expect(one.sequences).toHaveLength(5);
    expect(new Set(one.sequences.map((s) => s.tokens.join(","))).size).toBeGreaterThan(1);
    expect((await sampler().sample(asked)).sequences).toEqual(one.sequences);
    // Two samples per engine request: three requests, seeded so that sample i draws as it did.
    const chunked = await sampler({ maxChoices: 2 }).sample(asked);
    expect(chunked.sequences.map((s) => s.tokens)).toEqual(one.sequences.map((s) => s.tokens));
    chunked.sequences.forEach((s, i) => s.logprobs.forEach((lp, j) => expectClose(lp, one.sequences[i]!.logprobs[j])));

    // With logprobs, as a sample always has them (the engine draws from the raw logits then; a
    // seeded request without logprobs is drawn by llama.cpp's own sampler chain, otherwise).
    const legacy = await completions({ prompt, n: 5, max_tokens: 8, temperature: 0.9, seed: 1234, ignore_eos: true, logprobs: 0 });
    expect(legacy.map((c) => c.token_ids)).toEqual(one.sequences.map((s) => s.tokens));
    // At temperature 1 with no top-k/top-p (Tinker's defaults) the engine's own draw is taken: seeded alike.
    const plain = { ...asked, temperature: 1, seed: 77 };
    expect((await sampler({ maxChoices: 2 }).sample(plain)).sequences).toEqual((await sampler().sample(plain)).sequences.map((s) => expect.objectContaining({ tokens: s.tokens })));
    // Another seed, and no seed, draw otherwise.
    const other = await sampler().sample({ ...asked, seed: 99 });
    expect(other.sequences.map((s) => s.tokens)).not.toEqual(one.sequences.map((s) => s.tokens));
    const unseeded = await sampler().sample({ ...asked, seed: null, numSamples: 2, temperature: 1 });
    expect(unseeded.sequences).toHaveLength(2);
  });

  it("returns the logprob of each sampled token that compute_logprobs gives for it", async () => {
    // At temperature 1 with no top-k/top-p (Tinker's defaults), as an RL rollout samples.
    const sampled = (await sampler().sample(request({ maxTokens: 6, temperature: 1, seed: 5, stop: { kind: "none" } }))).sequences[0]!;
    // compute_logprobs: num_samples 1, SamplingParams(max_tokens=1), prompt_logprobs.
    const scored = await sampler().sample(request({ prompt: [...prompt, ...sampled.tokens], maxTokens: 1, temperature: 1, promptLogprobs: true }));
    const tail = scored.promptLogprobs?.slice(prompt.length) ?? [];
    expect(tail).toHaveLength(6);
    tail.forEach((logprob, i) => expectClose(logprob, sampled.logprobs[i], `token ${i}`));
    expect(scored.sequences[0]?.tokens).toHaveLength(1);
  });

  it("serves prompt logprobs with top-k exactly as /v1/completions' prompt_logprobs, and only the last N when asked", async () => {
    const result = await sampler().sample(request({ maxTokens: 1, temperature: 1, promptLogprobs: true, topkPromptLogprobs: 3 }));
    const [legacy] = await completions({ prompt, max_tokens: 1, prompt_logprobs: 3 });
    const entries = legacy?.prompt_logprobs ?? [];
    expect(result.promptLogprobs).toHaveLength(prompt.length);
    expect(result.topkPromptLogprobs).toHaveLength(prompt.length);
    expect(result.promptLogprobs?.[0]).toBeNull();
    expect(result.topkPromptLogprobs?.[0]).toBeNull();
    expect(entries[0]).toBeNull();
    for (let i = 1; i < prompt.length; i++) {
      const entry = entries[i] ?? {};
      expectClose(result.promptLogprobs?.[i], entry[String(prompt[i])]?.logprob, `prompt token ${i}`);
      const ranked = Object.entries(entry)
        .filter(([, item]) => item.rank <= 3)
        .sort((a, b) => a[1].rank - b[1].rank);
      expect(result.topkPromptLogprobs?.[i]?.ids).toEqual(ranked.map(([id]) => Number(id)));
      result.topkPromptLogprobs?.[i]?.logprobs.forEach((lp, j) => expectClose(lp, ranked[j]![1].logprob));
    }
    // The prompt's pass evaluated it afresh: no cache hits reported.
    expect(result.promptCacheHitTokens).toBe(0);

    // prompt_logprobs_last_n: earlier entries are null, the last N the same values.
    const last = await sampler().sample(request({ maxTokens: 0, promptLogprobs: true, topkPromptLogprobs: 2, promptLogprobsLastN: 2 }));
    expect(last.sequences).toEqual([{ tokens: [], logprobs: [], stopReason: "length", topk: null }]);
    expect(last.promptLogprobs?.slice(0, prompt.length - 2).every((v) => v === null)).toBe(true);
    expect(last.topkPromptLogprobs?.slice(0, prompt.length - 2).every((v) => v === null)).toBe(true);
    last.promptLogprobs?.slice(-2).forEach((lp, j) => expectClose(lp, result.promptLogprobs?.[prompt.length - 2 + j]));
    expect(last.topkPromptLogprobs?.slice(-2).map((row) => row?.ids)).toEqual(result.topkPromptLogprobs?.slice(-2).map((row) => row?.ids.slice(0, 2)));
    // Top-k prompt logprobs without the prompt's own logprobs.
    const onlyTopk = await sampler().sample(request({ maxTokens: 1, topkPromptLogprobs: 1 }));
    expect(onlyTopk.promptLogprobs).toBeNull();
    expect(onlyTopk.topkPromptLogprobs?.[1]?.ids).toEqual(result.topkPromptLogprobs?.[1]?.ids.slice(0, 1));
  });

  it("ends a sequence with its end-of-sequence token and that token's raw logprob; stop=[] samples past it", async () => {
    const toEos = sampler({ engine: biased({ [eos]: 100 }) });
    const ended = await toEos.sample(request({ maxTokens: 5, stop: { kind: "eos" } }));
    expect(ended.sequences[0]).toMatchObject({ tokens: [eos], stopReason: "stop" });
    // The logprob is the raw model's, before the bias: what compute_logprobs gives for it.
    const scored = await sampler().sample(request({ prompt: [...prompt, eos], maxTokens: 0, promptLogprobs: true }));
    expectClose(ended.sequences[0]?.logprobs[0], scored.promptLogprobs?.at(-1));
    expect(ended.sequences[0]?.logprobs[0]).toBeLessThan(-1);
    // A list of stop tokens keeps the end-of-sequence stop.
    const listed = await toEos.sample(request({ maxTokens: 5, stop: { kind: "tokens", values: [prompt[0]!] } }));
    expect(listed.sequences[0]).toMatchObject({ tokens: [eos], stopReason: "stop" });
    const strings = await toEos.sample(request({ maxTokens: 5, stop: { kind: "strings", values: ["\n\nUser:"] } }));
    expect(strings.sequences[0]).toMatchObject({ tokens: [eos], stopReason: "stop" });
    // A stop string that spells a special token (not an end token) stops at it.
    const toStart = sampler({ engine: biased({ [imStart]: 100 }) });
    const special = await toStart.sample(request({ maxTokens: 5, stop: { kind: "strings", values: ["<|im_start|>"] } }));
    expect(special.sequences[0]).toMatchObject({ tokens: [imStart], stopReason: "stop" });
    expect((await toStart.sample(request({ maxTokens: 3 }))).sequences[0]).toMatchObject({ tokens: [imStart, imStart, imStart], stopReason: "length" });
    // stop=[]: nothing stops but max_tokens.
    const none = await toEos.sample(request({ maxTokens: 4, stop: { kind: "none" }, numSamples: 2 }));
    for (const sequence of none.sequences) expect(sequence).toMatchObject({ tokens: [eos, eos, eos, eos], stopReason: "length" });
  });

  it("stops on a stop token with that token last, and on a stop string with the token that completes it last", async () => {
    const greedy = (await sampler().sample(request({ maxTokens: 24, stop: { kind: "none" } }))).sequences[0]!;
    const at = greedy.tokens.findIndex((token, i) => i >= 2 && !greedy.tokens.slice(0, i).includes(token));
    expect(at).toBeGreaterThanOrEqual(2);
    const byToken = (await sampler().sample(request({ maxTokens: 24, stop: { kind: "tokens", values: [greedy.tokens[at]!] } }))).sequences[0]!;
    expect(byToken.tokens).toEqual(greedy.tokens.slice(0, at + 1));
    expect(byToken.stopReason).toBe("stop");
    byToken.logprobs.forEach((lp, i) => expectClose(lp, greedy.logprobs[i]));

    // A stop string: the text of one output token that the text before it does not contain.
    const [legacy] = await completions({ prompt, max_tokens: 24, temperature: 0, ignore_eos: true, logprobs: 0 });
    expect(legacy?.token_ids).toEqual(greedy.tokens);
    const texts = legacy?.logprobs?.tokens ?? [];
    const pick = texts.findIndex((text, i) => i >= 1 && /^[\x20-\x7e]+$/.test(text) && texts.slice(0, i).every((t) => /^[\x20-\x7e]*$/.test(t)) && !texts.slice(0, i).join("").includes(text));
    expect(pick, JSON.stringify(texts)).toBeGreaterThanOrEqual(1);
    const byString = (await sampler().sample(request({ maxTokens: 24, stop: { kind: "strings", values: [texts[pick]!] } }))).sequences[0]!;
    expect(byString.tokens).toEqual(greedy.tokens.slice(0, pick + 1));
    expect(byString.stopReason).toBe("stop");
    expect(byString.logprobs).toHaveLength(pick + 1);
  });

  it("samples up to the context's end with max_tokens null, and nothing with max_tokens 0", async () => {
    // A prompt that leaves 40 tokens of the context.
    const long = Array.from({ length: contextLength - 40 }, (_, i) => prompt[i % prompt.length]!);
    const full = (await sampler().sample(request({ prompt: long, maxTokens: null, temperature: 1, seed: 3, stop: { kind: "none" } }))).sequences[0]!;
    expect(full.tokens).toHaveLength(40);
    expect(full.logprobs).toHaveLength(40);
    expect(full.stopReason).toBe("length");
    // Past the context's end, max_tokens is cut there, as on /v1/completions.
    const capped = (await sampler().sample(request({ prompt: long, maxTokens: 1000, temperature: 1, seed: 3, stop: { kind: "none" } }))).sequences[0]!;
    expect(capped.tokens).toEqual(full.tokens);
    expect(capped.stopReason).toBe("length");
    const nothing = await sampler().sample(request({ maxTokens: 0, numSamples: 2 }));
    expect(nothing.sequences).toEqual([
      { tokens: [], logprobs: [], stopReason: "length", topk: null },
      { tokens: [], logprobs: [], stopReason: "length", topk: null },
    ]);
  });

  it("runs as a generation of the caller's entity: its limit of generations, the prompt bound, and what the engine cannot take", async () => {
    const limited = new TokenSampler({ engine: new EngineSet(engine, new Map(), { maxGenerationsPerEntity: 1 }), resolver, limits: limits(8) });
    const long = limited.sample(request({ maxTokens: 400, temperature: 1, stop: { kind: "none" } }));
    const second = await refusal(limited.sample(request({ maxTokens: 1 })));
    expect(second.kind).toBe("overloaded");
    expect(second.message).toContain("ENTITY_MAX_GENERATIONS=1");
    // Another entity is not held up by it.
    const other = await limited.sample(request({ entity: `${entity}-other`, maxTokens: 2 }));
    expect(other.sequences[0]?.tokens).toHaveLength(2);
    expect((await long).sequences[0]?.tokens).toHaveLength(400);

    const tooLong = await refusal(sampler({ maxPromptBytes: 16 }).sample(request()));
    expect(tooLong.kind).toBe("validation");
    expect((await refusal(sampler().sample(request({ prompt: [...prompt, 1_000_000] })))).message).toContain("outside this model's vocabulary");
    expect((await refusal(sampler().sample(request({ prompt: Array.from({ length: contextLength }, () => prompt[0]!) })))).message).toContain("context holds");
    for (const wrong of [{ numSamples: 0 }, { numSamples: 65 }, { prompt: [] }, { topK: -2 }, { topP: 0 }, { temperature: -1 }, { maxTokens: -1 }, { promptLogprobsLastN: 2 }, { topkSampleLogprobs: 21 }, { stop: { kind: "strings" as const, values: [""] } }]) {
      expect((await refusal(sampler().sample(request(wrong)))).kind, JSON.stringify(wrong)).toBe("bad_request");
    }
    expect((await refusal(sampler().sample(request({ promptLogprobs: true, promptLogprobsLastN: prompt.length })))).kind).toBe("bad_request");
    expect((await refusal(sampler().sample(request({ model: "no-such-model" })))).kind).toBe("not_found");

    // Cancelled by the caller: it ends with an error, not a half result.
    const cancel = new AbortController();
    const cancelled = sampler().sample(request({ maxTokens: null, temperature: 1, stop: { kind: "none" }, signal: cancel.signal }));
    setTimeout(() => cancel.abort(), 100);
    expect((await refusal(cancelled)).kind).toBe("cancelled");
  }, 120_000);
});

describe("tinker:// sampler weights as model names", () => {
  let run = "";
  let path = "";
  let step1 = "";

  beforeAll(async () => {
    const created = await rest("POST", "/v1/preview/models", { key, body: { project: "tinker", name: "sampled-run", base_model: BASE } });
    expect(created.status, created.text).toBe(200);
    run = (created.body as { id: string }).id;
    const adapter = join(scratch, "sampler.gguf");
    await makeRandomLora({ basePath: join(inject("dataDir"), "models", `${BASE}.gguf`), path: adapter, seed: 17, rank: 8, alpha: 16, targets: ["q", "k", "v", "o", "gate", "up", "down"] });
    await checkpoints.create(run, 1, {}, { gguf: await readFile(adapter), peft: null }, undefined, { name: "sampler_weights/000001" });
    path = `tinker://${run}/sampler_weights/000001`;
    step1 = `wandb-artifact:///${entity}/tinker/sampled-run:step1`;
  });

  it("samples the named checkpoint on TokenSampler, /v1/completions and /v1/chat/completions alike", async () => {
    const tuned = (await sampler().sample(request({ model: path, maxTokens: 10, stop: { kind: "none" } }))).sequences[0]!;
    const base = (await sampler().sample(request({ maxTokens: 10, stop: { kind: "none" } }))).sequences[0]!;
    expect(tuned.tokens).not.toEqual(base.tokens);
    const [byPath] = await completions({ model: path, prompt, max_tokens: 10, temperature: 0, ignore_eos: true });
    const [byStep] = await completions({ model: step1, prompt, max_tokens: 10, temperature: 0, ignore_eos: true });
    expect(byPath?.token_ids).toEqual(tuned.tokens);
    expect(byStep?.token_ids).toEqual(tuned.tokens);

    const chat = async (model: string) => {
      const res = await rest("POST", "/v1/chat/completions", { key, body: { model, messages: [{ role: "user", content: "Hello" }], max_tokens: 6, temperature: 0, ignore_eos: true, return_token_ids: true } });
      expect(res.status, res.text).toBe(200);
      return res.body as { model: string; choices: { token_ids: number[] }[] };
    };
    const chatByPath = await chat(path);
    expect(chatByPath.model).toBe(path);
    expect(chatByPath.choices[0]?.token_ids).toEqual((await chat(step1)).choices[0]?.token_ids);
    expect(chatByPath.choices[0]?.token_ids).not.toEqual((await chat(BASE)).choices[0]?.token_ids);
  });

  it("answers 404 for another entity's run and an unknown name, 400 for training weights", async () => {
    const stranger = await createKey(uniqueEntity("tinker-stranger"));
    const foreign = await rest("POST", "/v1/completions", { key: stranger, body: { model: path, prompt, max_tokens: 1 } });
    expect(foreign).toMatchObject({ status: 404, body: { error: { message: `The model \`${path}\` does not exist.` } } });
    expect((await refusal(sampler().sample(request({ entity: "someone-else", model: path })))).message).toBe(`The model \`${path}\` does not exist.`);
    const unknown = await rest("POST", "/v1/completions", { key, body: { model: `tinker://${run}/sampler_weights/000009`, prompt, max_tokens: 1 } });
    expect(unknown.status).toBe(404);
    const training = await rest("POST", "/v1/chat/completions", { key, body: { model: `tinker://${run}/weights/000001`, messages: [{ role: "user", content: "x" }] } });
    expect(training.status).toBe(400);
    expect(training.text).toContain("save_weights_for_sampler");
  });
});
