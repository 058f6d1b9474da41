// The rest of the OpenAI / vLLM surface through the official `openai` npm SDK: model listing and
// retrieval, the legacy completions API as evaluation harnesses drive it (echo + logprobs +
// max_tokens 0 gives the engine's own log-likelihood of a continuation), streamed completions,
// and validation errors that reach the SDK as BadRequestError naming the field.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Checkpoints } from "../../services/models/checkpoints.js";
import { sharedBlobStore } from "../support/blob-store.js";
import { makeRandomLora } from "../../services/weights/lora.js";
import { rest } from "../support/clients.js";
import { withDatabase } from "../support/db.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: OpenAI;
let key = "";
let entity = "";
let scratch = "";
let modelName = "";

beforeAll(async () => {
  entity = uniqueEntity("surface");
  key = await createKey(entity);
  client = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: key, maxRetries: 0 });
  scratch = await mkdtemp(join(tmpdir(), "srl-surface-"));
  const created = await rest("POST", "/v1/preview/models", { key, body: { project: "evals", name: "scorer", base_model: "tiny-chat" } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const modelId = (created.body as { id: string }).id;
  // A trained step: a random LoRA adapter on the tiny model, stored as the worker stores one.
  const path = join(scratch, "step1.gguf");
  await makeRandomLora({ basePath: join(inject("dataDir"), "models", "tiny-chat.gguf"), path, seed: 11, rank: 8, alpha: 16, targets: ["q", "k", "v", "o", "gate", "up", "down"] });
  const data = await readFile(path);
  await withDatabase(async ({ db }) => {
    await new Checkpoints(db, sharedBlobStore()).create(modelId, 1, { loss: 1 }, { gguf: data, peft: null });
  });
  modelName = `wandb-artifact:///${entity}/evals/scorer`;
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

type LegacyLogprobs = { tokens: string[]; token_logprobs: (number | null)[]; top_logprobs: (Record<string, number> | null)[]; text_offset: number[] };
type LegacyChoice = OpenAI.Completions.CompletionChoice & { token_ids?: number[] | null; prompt_token_ids?: number[] | null };

describe("GET /v1/models", () => {
  it("lists base models and the key's models in OpenAI's shape, with vLLM's fields", async () => {
    const page = await client.models.list();
    const models = page.data as (OpenAI.Models.Model & { root: string; parent: string | null; max_model_len: number | null })[];
    const tiny = models.find((m) => m.id === "tiny-chat");
    expect(tiny).toMatchObject({ object: "model", owned_by: "srl", root: "tiny-chat", parent: null, max_model_len: 2048 });
    expect(typeof tiny?.created).toBe("number");
    expect(models.map((m) => m.id)).toContain("tiny-tools");
    const mine = models.find((m) => m.id === modelName);
    expect(mine).toMatchObject({ object: "model", owned_by: entity, root: "tiny-chat", parent: "tiny-chat", max_model_len: 2048 });
    // Steps only when asked.
    expect(models.some((m) => m.id.startsWith(`${modelName}:step`))).toBe(false);
    const withSteps = await rest("GET", "/v1/models?include_steps=true", { key });
    const ids = (withSteps.body as { data: { id: string; parent: string }[] }).data.filter((m) => m.id.startsWith(`${modelName}:`));
    expect(ids).toEqual([expect.objectContaining({ id: `${modelName}:step0`, parent: modelName }), expect.objectContaining({ id: `${modelName}:step1`, parent: modelName })]);
  });

  it("does not list another entity's models", async () => {
    const other = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: await createKey(uniqueEntity("surface-other")), maxRetries: 0 });
    const ids = (await other.models.list()).data.map((m) => m.id);
    expect(ids).toContain("tiny-chat");
    expect(ids).not.toContain(modelName);
    await expect(other.models.retrieve(modelName)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("retrieves a model by any name completions accept", async () => {
    expect(await client.models.retrieve("tiny-chat")).toMatchObject({ id: "tiny-chat", object: "model", max_model_len: 2048 });
    expect(await client.models.retrieve(modelName)).toMatchObject({ id: modelName, parent: "tiny-chat" });
    expect(await client.models.retrieve("evals/scorer:step1")).toMatchObject({ id: `${modelName}:step1`, parent: modelName });
    // Slashes as they are, not encoded.
    const raw = await rest("GET", `/v1/models/${modelName}:v1`, { key });
    expect(raw.status).toBe(200);
    expect(raw.body).toMatchObject({ id: `${modelName}:step1` });
    await expect(client.models.retrieve("evals/scorer:step9")).rejects.toThrow(/no checkpoint at step 9/);
    await expect(client.models.retrieve("no-such-model")).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await rest("GET", "/v1/models")).status).toBe(401);
  });
});

describe("POST /v1/completions", () => {
  /** Greedy tokens with their log-probabilities, then the same tokens scored as a continuation. */
  async function generateThenScore(model: string) {
    const prompt = "Once upon a time";
    const generated = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 0, ignore_eos: true, return_token_ids: true } as OpenAI.CompletionCreateParamsNonStreaming);
    const choice = generated.choices[0] as LegacyChoice;
    const logprobs = choice.logprobs as unknown as LegacyLogprobs;
    expect(choice.finish_reason).toBe("length");
    expect(logprobs.tokens).toHaveLength(8);
    const promptIds = (choice.prompt_token_ids ?? []) as number[];
    const outputIds = (choice.token_ids ?? []) as number[];
    expect(promptIds.length).toBeGreaterThan(0);
    // What lm-evaluation-harness sends for a log-likelihood: the context and continuation as one
    // prompt, echoed, with log-probabilities, generating nothing.
    const scored = await client.completions.create({ model, prompt: [...promptIds, ...outputIds], echo: true, logprobs: 1, max_tokens: 0, temperature: 0 });
    const scoredChoice = scored.choices[0] as LegacyChoice;
    const echoed = scoredChoice.logprobs as unknown as LegacyLogprobs;
    expect(scoredChoice.finish_reason).toBe("length");
    expect(scored.usage).toMatchObject({ prompt_tokens: promptIds.length + outputIds.length, completion_tokens: 0 });
    expect(echoed.tokens).toHaveLength(promptIds.length + outputIds.length);
    expect(echoed.token_logprobs[0]).toBeNull();
    expect(echoed.top_logprobs[0]).toBeNull();
    const continuation = echoed.token_logprobs.slice(promptIds.length) as number[];
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    return { generated: logprobs, continuation, echoed, text: choice.text, sum };
  }

  it("scores a continuation with echo + logprobs + max_tokens 0: the engine's own log-probabilities", async () => {
    const { generated, continuation, echoed, sum } = await generateThenScore("tiny-chat");
    expect(continuation).toHaveLength(8);
    continuation.forEach((value, index) => expect(value).toBeCloseTo(generated.token_logprobs[index] as number, 3));
    expect(sum(continuation)).toBeCloseTo(sum(generated.token_logprobs as number[]), 3);
    // Greedy tokens were the most likely: each is its own top-1 alternative.
    for (const [index, top] of echoed.top_logprobs.slice(-8).entries()) expect(Math.max(...Object.values(top ?? {}))).toBeCloseTo(continuation[index] as number, 5);
    // text_offset walks the echoed text token by token.
    const joined = echoed.tokens.join("");
    echoed.text_offset.forEach((offset, index) => expect(joined.startsWith(echoed.tokens[index] as string, offset)).toBe(true));
  });

  it("serves checkpoints: a trained step scores its own generation, and differs from the base", async () => {
    const base = await generateThenScore("tiny-chat");
    const step = await generateThenScore(`${modelName}:step1`);
    step.continuation.forEach((value, index) => expect(value).toBeCloseTo(step.generated.token_logprobs[index] as number, 3));
    expect(step.text).not.toBe(base.text);
    // Step 0 is the base model.
    const zero = await client.completions.create({ model: `${modelName}:step0`, prompt: "Once upon a time", max_tokens: 8, temperature: 0, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(zero.choices[0]?.text).toBe(base.text);
  });

  it("echoes a text prompt and numbers choices prompt x n + choice", async () => {
    const result = await client.completions.create({ model: "tiny-chat", prompt: ["Hello there", "General"], n: 2, max_tokens: 3, echo: true, seed: 5 });
    expect(result.object).toBe("text_completion");
    expect(result.id).toMatch(/^cmpl-/);
    expect(result.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(result.choices.slice(0, 2).every((c) => c.text.startsWith("Hello there"))).toBe(true);
    expect(result.choices.slice(2).every((c) => c.text.startsWith("General"))).toBe(true);
    expect(result.usage?.completion_tokens).toBeLessThanOrEqual(12);
    expect(result.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("streams the same text as the unary call, with usage when asked", async () => {
    const body = { model: "tiny-chat", prompt: "The weather today", max_tokens: 10, temperature: 0, ignore_eos: true };
    const unary = await client.completions.create(body);
    const stream = await client.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("text_completion");
      for (const choice of chunk.choices) {
        text += choice.text;
        finish = choice.finish_reason ?? finish;
      }
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(unary.choices[0]?.text);
    expect(finish).toBe("length");
    expect(usage).toMatchObject({ completion_tokens: 10, prompt_tokens: unary.usage?.prompt_tokens });
  });

  it("streams an echo with its log-probabilities first", async () => {
    const stream = await client.completions.create({ model: "tiny-chat", prompt: "Counting: one two", max_tokens: 2, echo: true, logprobs: 2, stream: true, temperature: 0 });
    const chunks: LegacyChoice[] = [];
    for await (const chunk of stream) chunks.push(...(chunk.choices as LegacyChoice[]));
    expect(chunks[0]?.text).toBe("Counting: one two");
    const first = chunks[0]?.logprobs as unknown as LegacyLogprobs;
    expect(first.token_logprobs[0]).toBeNull();
    expect(first.tokens.join("")).toContain("Counting");
    const generated = chunks.slice(1).flatMap((c) => (c.logprobs as unknown as LegacyLogprobs | null)?.token_logprobs ?? []);
    expect(generated).toHaveLength(2);
  });

  it("refuses what it cannot honour with BadRequestError naming the field", async () => {
    const refused = async (body: Record<string, unknown>, pattern: RegExp) => {
      const error = await client.completions.create({ model: "tiny-chat", prompt: "x", ...body } as unknown as OpenAI.CompletionCreateParamsNonStreaming).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as Error).message).toMatch(pattern);
    };
    await refused({ suffix: "end" }, /suffix/);
    await refused({ max_tokens: 0 }, /max_tokens.*echo/);
    await refused({ best_of: 3 }, /best_of/);
    await refused({ prompt: { a: 1 } }, /prompt/);
    await refused({ prompt: [] }, /prompt/);
    await refused({ prompt: [[1, 2], "x"] }, /prompt/);
    await refused({ prompt: [99999999] }, /token id 99999999/);
    await refused({ logprobs: 21 }, /logprobs/);
  });
});

describe("validation errors on the OpenAI routes", () => {
  const chat = (messages: unknown[], extra: Record<string, unknown> = {}) =>
    client.chat.completions.create({ model: "tiny-chat", messages, max_tokens: 2, ...extra } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming).catch((e: unknown) => e);

  it("content that is not a string, a list of parts or an allowed null is a BadRequestError naming it", async () => {
    for (const content of [123, { a: 1 }, [{ type: "text" }], [{ type: "hologram", text: "x" }], ["plain"]]) {
      const error = await chat([{ role: "user", content }]);
      expect(error, JSON.stringify(content)).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/messages\.0\.content/);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toMatch(/^messages\.0\.content/);
    }
    const noContent = await chat([{ role: "user" }]);
    expect((noContent as Error).message).toMatch(/messages\.0\.content: Field required/);
    const nullUser = await chat([{ role: "user", content: null }]);
    expect(nullUser).toBeInstanceOf(OpenAI.BadRequestError);
    // Null is fine where the role allows it.
    const ok = await client.chat.completions.create({
      model: "tiny-chat",
      max_tokens: 2,
      messages: [
        { role: "user", content: [{ type: "text", text: "hi" }] },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: "done" },
      ],
    });
    expect(ok.choices).toHaveLength(1);
  });

  it("an unknown role is a BadRequestError listing the known ones", async () => {
    const error = await chat([{ role: "wizard", content: "hi" }]);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/messages\.0\.role: Input should be 'system', 'developer', 'user', 'assistant', 'tool' or 'function'/);
  });

  it("keeps FastAPI's detail list in the 400 body, and the preview API its 422", async () => {
    const res = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages: [{ role: "user", content: 5 }], n: 0 } });
    expect(res.status).toBe(400);
    const body = res.body as { error: { type: string; code: number; param: string; message: string }; detail: { loc: unknown[] }[] };
    expect(body.error).toMatchObject({ type: "BadRequestError", code: 400, param: "n" });
    expect(body.detail.map((d) => d.loc)).toEqual([["body", "n"]]);
    // Field types first (the decoder), then the message rules: both name their field.
    const content = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages: [{ role: "user", content: 5 }] } });
    expect((content.body as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc)).toEqual([["body", "messages", 0, "content"]]);
    const preview = await rest("GET", "/v1/preview/models?limit=0", { key });
    expect(preview.status).toBe(422);
  });

  it("tools a template does not render are refused, not dropped", async () => {
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } }];
    const error = await chat([{ role: "user", content: "hi" }], { tools });
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/chat template of tiny-chat does not render tools/);
    // The tool-aware template takes them.
    const ok = await client.chat.completions.create({ model: "tiny-tools", messages: [{ role: "user", content: "hi" }], tools, max_tokens: 2 } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(ok.choices).toHaveLength(1);
  });
});
