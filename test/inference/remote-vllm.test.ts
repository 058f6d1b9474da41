// A base model served by vLLM replicas (ENGINES kind "vllm"), end to end through the real service:
// vLLM cannot run here (no GPU), so two in-process stand-ins speaking its documented API play the
// replicas (test/support/vllm-stand-in.ts) and record what the service asks of them. The service
// renders and tokenizes the prompt itself (tiny-chat's tokenizer), maps the request onto vLLM's
// /v1/completions fields, applies stop strings itself, loads checkpoints as LoRA adapters at
// runtime, and moves a choice that fails before its first token to the other replica.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Checkpoints } from "../../services/models/checkpoints.js";
import { localBlobStore } from "../../services/store/index.js";
import { makeRandomLora } from "../../services/weights/lora.js";
import { rest, type RestResponse } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";
import { logprobsAt, MAX_MODEL_LEN, SERVED_MODEL, startVllmStandIn, tokenText, tokensAfter, type VllmStandIn } from "../support/vllm-stand-in.js";

const ENTITY = "vllm-user";
const messages = [{ role: "user", content: "Say something about replicas." }];

let a: VllmStandIn;
let b: VllmStandIn;
let isolated: IsolatedServer;
let client: OpenAI;
/** The prompt's token ids as the service renders `messages` for vbase. */
let prompt: number[] = [];

interface ChatBody {
  prompt_token_ids?: number[];
  choices: {
    message: { content: string };
    finish_reason: string;
    stop_reason?: number | string | null;
    token_ids?: number[];
    logprobs?: { content: { token: string; logprob: number; bytes: number[]; top_logprobs: { token: string; logprob: number; bytes: number[] }[] }[] } | null;
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } | null };
  error?: { message: string };
}

const chat = (body: Record<string, unknown>) => rest("POST", "/v1/chat/completions", { key: isolated.key, base: isolated.server.url, body: { messages, ...body } });
const bodyOf = (res: RestResponse) => res.body as ChatBody;

/** A chat completion that must succeed. */
async function ok(body: Record<string, unknown>): Promise<ChatBody> {
  const res = await chat(body);
  expect(res.status, res.text).toBe(200);
  return bodyOf(res);
}

/** The completions both replicas were asked for. */
const sent = () => [...a.completions(), ...b.completions()];

/** Brings a replica back and waits until the service's health checks have seen it up. */
async function bringBack(replica: VllmStandIn): Promise<void> {
  await replica.start();
  await replica.healthChecks(2);
}

const textOf = (ids: number[]) => ids.map(tokenText).join("");

async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 10_000) throw new Error("timed out waiting for a condition");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

beforeAll(async () => {
  [a, b] = await Promise.all([startVllmStandIn(), startVllmStandIn()]);
  // servedModelName is left out: the service reads the base model's name from /v1/models.
  const engines = { vbase: { kind: "vllm", replicas: [a.url, b.url], maxAdapters: 1, healthIntervalMs: 200 } };
  isolated = await startIsolatedServer({ name: "remote-vllm", entity: ENTITY, env: { BASE_MODELS: "vbase=builtin:tiny-chat", ENGINES: JSON.stringify(engines), TRAINING_WORKER: "0" } });
  client = new OpenAI({ baseURL: `${isolated.server.url}/v1`, apiKey: isolated.key, maxRetries: 0 });
  prompt = (await ok({ model: "vbase", max_tokens: 1, return_token_ids: true })).prompt_token_ids ?? [];
}, 180_000);

afterAll(async () => {
  await isolated?.stop();
  await Promise.all([a?.stop(), b?.stop()]);
});

beforeEach(() => {
  a.reset();
  b.reset();
});

describe("vLLM replicas: the request as vLLM gets it, and its answer mapped back", () => {
  it("sends the prompt as tiny-chat's own token ids, to the model /v1/models names, with max_model_len as the context", async () => {
    // The embedded engine (the shared test server) renders the same messages into the same tokens.
    const key = await createKey(uniqueEntity("vllm-ref"));
    const embedded = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, max_tokens: 1, return_token_ids: true } });
    expect(prompt.length).toBeGreaterThan(5);
    expect(prompt).toEqual((embedded.body as ChatBody).prompt_token_ids);

    const listed = await client.models.retrieve("vbase");
    expect((listed as unknown as { max_model_len: number }).max_model_len).toBe(MAX_MODEL_LEN);
  });

  it("maps the sampling fields onto vLLM's and token ids, log-probabilities and usage back (unary)", async () => {
    const every = Array.from({ length: 200 }, (_, i) => i + 1);
    const result = await ok({
      model: "vbase",
      max_tokens: 6,
      temperature: 0.7,
      top_p: 0.9,
      top_k: 20,
      min_p: 0.05,
      seed: 42,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      repetition_penalty: 1.1,
      logit_bias: { "7": 2.5 },
      bad_words: ["zebra"],
      allowed_token_ids: every,
      min_tokens: 2,
      stop_token_ids: [700],
      ignore_eos: true,
      skip_special_tokens: false,
      spaces_between_special_tokens: false,
      cache_salt: "salt-1",
      logprobs: true,
      top_logprobs: 2,
      return_token_ids: true,
    });

    expect(sent()).toHaveLength(1);
    const body = sent()[0] ?? {};
    expect(body).toEqual({
      model: SERVED_MODEL,
      prompt,
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
      return_token_ids: true,
      temperature: 0.7,
      top_p: 0.9,
      top_k: 20,
      min_p: 0.05,
      seed: 42,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      repetition_penalty: 1.1,
      logit_bias: { "7": 2.5 },
      bad_words: ["zebra"],
      allowed_token_ids: every,
      min_tokens: 2,
      stop_token_ids: [700],
      ignore_eos: true,
      skip_special_tokens: false,
      spaces_between_special_tokens: false,
      cache_salt: "salt-1",
      logprobs: 2,
    });

    const expected = tokensAfter(prompt, 6);
    const choice = result.choices[0];
    expect(choice).toMatchObject({ finish_reason: "length", token_ids: expected, message: { content: textOf(expected) } });
    expect(result.usage).toMatchObject({ prompt_tokens: prompt.length, completion_tokens: 6 });
    // vLLM's legacy logprobs (an unordered dict per token, with the sampled token in it) -> the
    // chat form: the two likeliest, likeliest first, with each token's UTF-8 bytes.
    const bytes = (token: string) => [...Buffer.from(token, "utf8")];
    expect(choice?.logprobs?.content).toEqual(
      expected.map((id, i) => {
        const { sampled, top } = logprobsAt(i, id, 2);
        const best = Object.entries(top)
          .sort((x, y) => y[1] - x[1])
          .slice(0, 2);
        return { token: tokenText(id), logprob: sampled, bytes: bytes(tokenText(id)), top_logprobs: best.map(([token, logprob]) => ({ token, logprob, bytes: bytes(token) })) };
      }),
    );
    // At even positions the sampled token leads; at odd ones it is cut (it is not among the two likeliest).
    expect(choice?.logprobs?.content[0]?.top_logprobs[0]?.token).toBe(tokenText(expected[0] as number));
    expect(choice?.logprobs?.content[1]?.top_logprobs.map((t) => t.token)).toEqual(["alt0", "alt1"]);
  });

  it("ends where vLLM ends at the end of sequence, with the prompt tokens vLLM had cached", async () => {
    const expected = tokensAfter(prompt, 8);
    a.cachedTokens = b.cachedTokens = 3;
    a.eosTokenId = b.eosTokenId = expected[5] as number;
    const result = await ok({ model: "vbase", max_tokens: 8, return_token_ids: true });
    expect(result.choices[0]).toMatchObject({ finish_reason: "stop", message: { content: textOf(expected.slice(0, 5)) } });
    // vLLM sends usage (with cached_tokens) in a chunk of its own after the last token.
    expect(result.usage.prompt_tokens_details?.cached_tokens).toBe(3);
  });

  // vLLM keeps the end-of-sequence token's id in token_ids (with no text) and says stop_reason
  // null; the embedded engine leaves it out of token_ids and completion_tokens and names it as
  // stop_reason (chat.test.ts, "holds it back until min_tokens"), and so does the service here.
  it("reports an end of sequence as the embedded engine does: no EOS id in token_ids, EOS as stop_reason", async () => {
    const expected = tokensAfter(prompt, 8);
    const imEnd = 767; // <|im_end|>, tiny-chat's end of turn
    a.eosTokenId = b.eosTokenId = imEnd;
    a.eosAt = b.eosAt = 5;
    const result = await ok({ model: "vbase", max_tokens: 8, return_token_ids: true });
    expect(result.choices[0]).toMatchObject({ finish_reason: "stop", stop_reason: imEnd, token_ids: expected.slice(0, 5) });
    expect(result.usage.completion_tokens).toBe(5);
  });

  // When the service ends a choice at max_tokens it reads vLLM's stream to its end, where the
  // usage chunk says what the prompt reused.
  it("reports vLLM's cached prompt tokens when the choice ends at max_tokens", async () => {
    a.cachedTokens = b.cachedTokens = 3;
    const result = await ok({ model: "vbase", max_tokens: 6 });
    expect(result.usage.prompt_tokens_details?.cached_tokens).toBe(3);
  });

  it("streams, ending on a stop token id with the token left out and named as stop_reason", async () => {
    const expected = tokensAfter(prompt, 10);
    const stopId = expected[4] as number;
    const stream = await client.chat.completions.create({
      model: "vbase",
      messages: messages as OpenAI.ChatCompletionMessageParam[],
      max_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
      ...({ stop_token_ids: [stopId], return_token_ids: true } as Record<string, unknown>),
    });
    let text = "";
    const ids: number[] = [];
    let finish: string | null | undefined;
    let stopReason: unknown;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0] as (OpenAI.ChatCompletionChunk.Choice & { token_ids?: number[]; stop_reason?: unknown }) | undefined;
      text += choice?.delta.content ?? "";
      ids.push(...(choice?.token_ids ?? []));
      finish = choice?.finish_reason ?? finish;
      stopReason = choice?.stop_reason ?? stopReason;
      usage = chunk.usage ?? usage;
    }
    expect(sent()).toHaveLength(1);
    expect(sent()[0]).toMatchObject({ stream: true, stop_token_ids: [stopId], max_tokens: 10 });
    expect(ids).toEqual(expected.slice(0, 4));
    expect(text).toBe(textOf(expected.slice(0, 4)));
    expect(finish).toBe("stop");
    expect(stopReason).toBe(stopId);
    expect(usage?.completion_tokens).toBe(4);
  });

  it("applies stop strings itself (vLLM never sees them) and asks for the context left without max_tokens", async () => {
    const expected = tokensAfter(prompt, 8);
    const stop = tokenText(expected[3] as number);
    const result = await ok({ model: "vbase", stop: [stop] });
    const body = sent()[0] ?? {};
    expect(body).not.toHaveProperty("stop");
    expect(body.max_tokens).toBe(MAX_MODEL_LEN - prompt.length);
    expect(result.choices[0]).toMatchObject({ finish_reason: "stop", stop_reason: stop, message: { content: textOf(expected.slice(0, 3)) } });
  });

  it("sends a json_schema response_format as a grammar in structured_outputs", async () => {
    const schema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] };
    await ok({ model: "vbase", max_tokens: 3, response_format: { type: "json_schema", json_schema: { name: "reply", schema } } });
    const body = sent()[0] ?? {};
    const grammar = (body.structured_outputs as { grammar?: unknown } | undefined)?.grammar;
    expect(typeof grammar).toBe("string");
    expect(grammar).toMatch(/^root\s*::=/m);
    expect(grammar).toContain("answer");
    expect(Object.keys(body).filter((field) => /response_format|guided|json_schema/.test(field))).toEqual([]);
  });

  it("refuses prompt_logprobs (vLLM returns them only unstreamed) before asking any replica", async () => {
    const res = await chat({ model: "vbase", max_tokens: 2, prompt_logprobs: 1 });
    expect(res.status).toBe(400);
    expect(bodyOf(res).error?.message).toContain("prompt_logprobs");
    expect(sent()).toEqual([]);
  });
});

describe("vLLM replicas: checkpoints as runtime-loaded LoRA adapters", () => {
  let scratch = "";
  let modelId = "";
  const project = "remote";
  const name = "tuned";
  const adapterConfig = Buffer.from(JSON.stringify({ peft_type: "LORA", r: 2, lora_alpha: 4, target_modules: ["q_proj"], base_model_name_or_path: "tiny-chat" }));
  // A valid, empty safetensors file: an 8-byte little-endian header length, then the JSON header.
  const weights = Buffer.concat([Buffer.from([2, 0, 0, 0, 0, 0, 0, 0]), Buffer.from("{}")]);

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "srl-vllm-"));
    const created = await rest("POST", "/v1/preview/models", { key: isolated.key, base: isolated.server.url, body: { project, name, base_model: "vbase" } });
    expect(created.status, created.text).toBe(200);
    modelId = (created.body as { id: string }).id;
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  /** Adds a checkpoint the way the trainer does (GGUF and PEFT files); resolves with its adapter key. */
  async function addCheckpoint(step: number): Promise<string> {
    const path = join(scratch, `step${step}.gguf`);
    await makeRandomLora({ basePath: join(isolated.dataDir, "models", "tiny-chat.gguf"), path, seed: step, rank: 2, alpha: 4, targets: ["q"] });
    const record = await new Checkpoints(isolated.db.db, localBlobStore(isolated.dataDir)).create(
      modelId,
      step,
      { loss: 1 },
      { gguf: await readFile(path), peft: { "adapter_config.json": adapterConfig, "adapter_model.safetensors": weights } },
    );
    // The adapter's key (its directory under DATA_DIR/adapters) is its GGUF blob's name.
    return record.adapter_sha256 ?? "";
  }

  const atStep = (step: number) => ({ model: `${project}/${name}:step${step}`, max_tokens: 2 });
  const loads = (replica: VllmStandIn) => replica.calls("/v1/load_lora_adapter").map((call) => call.body);
  const unloads = (replica: VllmStandIn) => replica.calls("/v1/unload_lora_adapter").map((call) => call.body);

  it("loads a checkpoint's PEFT directory under its key, names it as the model, and unloads past maxAdapters", async () => {
    const [first, second] = [await addCheckpoint(1), await addCheckpoint(2)];
    // One replica only, so both checkpoints meet on it (maxAdapters is 1).
    await b.stop();
    try {
      await ok(atStep(1));
      expect(loads(a), JSON.stringify({ first, second, loads: loads(a), onB: loads(b) })).toEqual([{ lora_name: first, lora_path: expect.any(String) }]);
      const path = loads(a)[0]?.lora_path as string;
      // The directory vLLM reads: the PEFT files as the trainer wrote them.
      expect(await readFile(join(path, "adapter_config.json"))).toEqual(adapterConfig);
      expect(await readFile(join(path, "adapter_model.safetensors"))).toEqual(weights);
      expect(a.completions().at(-1)?.model).toBe(first);

      await ok(atStep(2));
      expect(loads(a).map((body) => body.lora_name)).toEqual([first, second]);
      expect(unloads(a)).toEqual([{ lora_name: first }]);
      // Loaded before the other goes: the unload comes after the new load.
      const order = a.requests.filter((r) => r.path.endsWith("_lora_adapter")).map((r) => `${r.path}:${String(r.body.lora_name)}`);
      expect(order).toEqual([`/v1/load_lora_adapter:${first}`, `/v1/load_lora_adapter:${second}`, `/v1/unload_lora_adapter:${first}`]);
      expect([...a.loras.keys()]).toEqual([second]);
      expect(a.completions().at(-1)?.model).toBe(second);
      // The base model is still asked for by its own name.
      await ok({ model: "vbase", max_tokens: 1 });
      expect(a.completions().at(-1)?.model).toBe(SERVED_MODEL);
    } finally {
      await bringBack(b);
    }
  });

  it("keeps sending a checkpoint to the replica that loaded it (one load in all)", async () => {
    const key = await addCheckpoint(3);
    for (let i = 0; i < 4; i++) await ok(atStep(3));
    const loaded = [...loads(a), ...loads(b)].filter((body) => body.lora_name === key);
    expect(loaded).toHaveLength(1);
    const holder = loads(a).length > 0 ? a : b;
    const other = holder === a ? b : a;
    expect(holder.completions().filter((body) => body.model === key)).toHaveLength(4);
    expect(other.completions()).toEqual([]);
  });

  it("takes an adapter the replica already holds (loaded by an earlier run of the service) as loaded", async () => {
    const key = await addCheckpoint(4);
    // Where the earlier run had it: any directory with a PEFT config will do for vLLM.
    const elsewhere = join(scratch, "preloaded");
    await mkdir(elsewhere, { recursive: true });
    await writeFile(join(elsewhere, "adapter_config.json"), adapterConfig);
    for (const replica of [a, b]) {
      const res = await fetch(`${replica.url}/v1/load_lora_adapter`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ lora_name: key, lora_path: elsewhere }) });
      expect(res.status).toBe(200);
    }
    a.reset();
    b.reset();
    await ok(atStep(4));
    // Either a health check saw it in /v1/models first (no load sent), or the load was refused
    // with vLLM's "has already been loaded"; in both the completion went ahead, loaded once at most.
    const attempts = [...loads(a), ...loads(b)].map((body) => body.lora_name);
    expect(attempts.length).toBeLessThanOrEqual(1);
    expect(attempts.every((name) => name === key)).toBe(true);
    expect(sent().map((body) => body.model)).toEqual([key]);
  });

  // Past maxAdapters with every older adapter in use, the adapter just loaded stays (the busy one
  // goes once it is free).
  it("serves a new adapter while the one it would unload is still in use", async () => {
    const [busy, fresh] = [await addCheckpoint(6), await addCheckpoint(7)];
    await b.stop();
    try {
      // A long completion on `busy` (20 tokens, 50 ms each) is in flight when `fresh` is asked for.
      a.tokenDelayMs = 50;
      const long = chat({ ...atStep(6), max_tokens: 20 });
      await until(() => a.completions().some((body) => body.model === busy));
      const second = await chat(atStep(7));
      const first = await long;
      expect(first.status, first.text).toBe(200);
      expect(second.status, second.text).toBe(200);
      expect(a.completions().map((body) => body.model)).toEqual([busy, fresh]);
    } finally {
      await bringBack(b);
    }
  });

  // A replica that comes back up without the adapters it had (a restart) gets them loaded again:
  // the health checks read what it has, and a 404 for an adapter loads it again once.
  it("loads an adapter again on a replica that restarted and lost it", async () => {
    const key = await addCheckpoint(5);
    await ok(atStep(5));
    const holder = loads(a).some((body) => body.lora_name === key) ? a : b;
    // A restart: down long enough for the health checks to notice, back without its adapters.
    await holder.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    holder.loras.clear();
    await bringBack(holder);
    a.reset();
    b.reset();
    await ok(atStep(5));
    expect([...loads(a), ...loads(b)].map((body) => body.lora_name)).toEqual([key]);
  });
});

describe("vLLM replicas: failover", () => {
  it("serves through the other replica while one is down", async () => {
    await a.stop();
    try {
      for (let i = 0; i < 3; i++) expect((await ok({ model: "vbase", max_tokens: 3 })).choices[0]?.message.content).toBe(textOf(tokensAfter(prompt, 3)));
      expect(b.completions()).toHaveLength(3);
    } finally {
      await bringBack(a);
    }
  });

  it("sends nothing to a replica whose health check fails", async () => {
    a.unhealthy = true;
    try {
      await a.healthChecks(2);
      // It would still answer (the stand-in serves regardless): only routing keeps requests away.
      for (let i = 0; i < 4; i++) await ok({ model: "vbase", max_tokens: 2 });
      expect(a.completions()).toEqual([]);
      expect(b.completions()).toHaveLength(4);
    } finally {
      a.unhealthy = false;
      await a.healthChecks(2);
    }
  });

  it("answers 503 naming every replica when all are down", async () => {
    await Promise.all([a.stop(), b.stop()]);
    try {
      const res = await chat({ model: "vbase", max_tokens: 3 });
      expect(res.status, res.text).toBe(503);
      const message = bodyOf(res).error?.message ?? "";
      expect(message).toContain("vbase");
      expect(message).toContain(a.url);
      expect(message).toContain(b.url);
    } finally {
      await Promise.all([bringBack(a), bringBack(b)]);
    }
    await ok({ model: "vbase", max_tokens: 1 });
  });

  it("moves a choice whose replica fails with a 500 before its first token to the other replica", async () => {
    a.failNextCompletion(500, "CUDA error: an illegal memory access was encountered");
    // Routing takes the replicas in turn: within a few requests one reaches `a` and fails there.
    let requests = 0;
    while (a.completions().length === 0 && requests < 4) {
      const result = await ok({ model: "vbase", max_tokens: 4, return_token_ids: true });
      expect(result.choices[0]?.token_ids).toEqual(tokensAfter(prompt, 4));
      requests++;
    }
    expect(a.completions()).toHaveLength(1);
    // Every request was completed by `b`, the failed one included.
    expect(b.completions()).toHaveLength(requests);
    await a.healthChecks(2);
  });

  it("passes a replica's 400 on as a 400 without trying the other replica", async () => {
    const refusal = "This model's maximum context length is 512 tokens. However, you requested 600 tokens.";
    a.failNextCompletion(400, refusal);
    b.failNextCompletion(400, refusal);
    const res = await chat({ model: "vbase", max_tokens: 3 });
    expect(res.status, res.text).toBe(400);
    expect(bodyOf(res).error?.message).toBe(refusal);
    expect(sent()).toHaveLength(1);
  });
});
