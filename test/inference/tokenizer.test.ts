// vLLM's tokenizer endpoints (/tokenize, /detokenize, /tokenizer_info and their /v1/ forms) on the
// shared server's tiny model: the tokens agree with the ones completions and chat completions run
// on (their prompt_token_ids), detokenize inverts tokenize, names resolve per entity as the
// completion endpoints resolve them, bad input gets the OpenAI error shape. Also over Connect.
import OpenAI from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { Tokenizer } from "../../gen/srl/v1/tokenizer_pb.js";
import { connectClient, rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let key = "";
let otherKey = "";
let client: OpenAI;
let modelName = "";

const TEXT = "The quick brown fox <|im_end|> jumps; ünïcödé 🦊!";

interface TokenizeBody {
  count: number;
  max_model_len: number;
  tokens: number[];
  token_strs: string[] | null;
}

beforeAll(async () => {
  const entity = uniqueEntity("tokenizer");
  key = await createKey(entity);
  otherKey = await createKey(uniqueEntity("tokenizer-other"));
  client = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: key, maxRetries: 0 });
  const created = await rest("POST", "/v1/preview/models", { key, body: { project: "tok", name: "mine", base_model: "tiny-tools" } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  modelName = `wandb-artifact:///${entity}/tok/mine`;
});

describe("POST /tokenize", () => {
  it("gives a prompt's tokens as a completion of it runs on them", async () => {
    const tokenized = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", prompt: TEXT } });
    expect(tokenized.status, JSON.stringify(tokenized.body)).toBe(200);
    const body = tokenized.body as TokenizeBody;
    const completion = await client.completions.create({ model: "tiny-chat", prompt: TEXT, max_tokens: 1, return_token_ids: true } as OpenAI.CompletionCreateParamsNonStreaming);
    const promptIds = (completion.choices[0] as { prompt_token_ids?: number[] }).prompt_token_ids;
    expect(body.tokens).toEqual(promptIds);
    expect(body).toMatchObject({ count: body.tokens.length, max_model_len: 2048, token_strs: null });
    // The special token's text is the special token, as in a completion's prompt.
    expect(body.tokens.length).toBeGreaterThan(10);
  });

  it("returns the vocabulary's pieces with return_token_strs, and /v1/tokenize is the same", async () => {
    const plain = await rest("POST", "/v1/tokenize", { key, body: { model: "tiny-chat", prompt: "hello world", return_token_strs: true, add_special_tokens: false } });
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    const body = plain.body as TokenizeBody;
    expect(body.token_strs).toHaveLength(body.count);
    // Byte-level BPE spells a space as "Ġ" (GPT-2's byte map), as transformers' convert_ids_to_tokens does.
    expect(body.token_strs?.join("").replaceAll("Ġ", " ")).toBe("hello world");
    const again = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", prompt: "hello world", add_special_tokens: false } });
    expect((again.body as TokenizeBody).tokens).toEqual(body.tokens);
    const empty = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", prompt: "", add_special_tokens: false } });
    expect(empty.body).toMatchObject({ count: 0, tokens: [] });
  });

  it("renders messages with the chat template as a chat completion does", async () => {
    const messages = [
      { role: "system", content: "Be brief." },
      { role: "user", content: [{ type: "text", text: "Hi there" }] },
    ];
    const tokenized = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", messages } });
    expect(tokenized.status, JSON.stringify(tokenized.body)).toBe(200);
    const chat = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, max_tokens: 1, return_token_ids: true } });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    expect((tokenized.body as TokenizeBody).tokens).toEqual((chat.body as { prompt_token_ids: number[] }).prompt_token_ids);
    const open = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", messages, add_generation_prompt: false } });
    expect((open.body as TokenizeBody).count).toBeLessThan((tokenized.body as TokenizeBody).count);
  });

  it("resolves the caller's registered model to its base model's tokenizer, and no one else's", async () => {
    const mine = await rest("POST", "/tokenize", { key, body: { model: modelName, prompt: "abc" } });
    expect(mine.status, JSON.stringify(mine.body)).toBe(200);
    const base = await rest("POST", "/tokenize", { key, body: { model: "tiny-tools", prompt: "abc" } });
    expect(mine.body).toEqual(base.body);
    const theirs = await rest("POST", "/tokenize", { key: otherKey, body: { model: modelName, prompt: "abc" } });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toMatchObject({ error: { message: expect.stringContaining("does not exist") } });
  });

  it("refuses bad input with the OpenAI error shape", async () => {
    const both = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", prompt: "a", messages: [{ role: "user", content: "a" }] } });
    expect(both.status).toBe(400);
    expect(both.body).toMatchObject({ error: { message: expect.stringContaining("either `prompt`") } });
    const neither = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat" } });
    expect(neither.status).toBe(400);
    const unknown = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", prompt: "a", frobnicate: 1 } });
    expect(unknown.status).toBe(400);
    const missing = await rest("POST", "/tokenize", { key, body: { model: "no-such-model", prompt: "a" } });
    expect(missing.status).toBe(404);
    const anonymous = await rest("POST", "/tokenize", { body: { model: "tiny-chat", prompt: "a" } });
    expect(anonymous.status).toBe(401);
    const badRole = await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", messages: [{ content: "a" }] } });
    expect(badRole.status).toBeGreaterThanOrEqual(400);
    expect(badRole.status).toBeLessThan(500);
  });
});

describe("POST /detokenize", () => {
  it("inverts /tokenize, special tokens included", async () => {
    const tokenized = (await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", prompt: TEXT, add_special_tokens: false } })).body as TokenizeBody;
    for (const path of ["/detokenize", "/v1/detokenize"]) {
      const back = await rest("POST", path, { key, body: { model: "tiny-chat", tokens: tokenized.tokens } });
      expect(back.status, JSON.stringify(back.body)).toBe(200);
      expect(back.body).toEqual({ prompt: TEXT });
    }
  });

  it("refuses a token outside the vocabulary", async () => {
    const bad = await rest("POST", "/detokenize", { key, body: { model: "tiny-chat", tokens: [1, 99999999] } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: { message: expect.stringContaining("99999999") } });
    const missing = await rest("POST", "/detokenize", { key, body: { model: "tiny-chat" } });
    expect(missing.status).toBe(400);
  });
});

describe("GET /tokenizer_info", () => {
  it("describes the default model's tokenizer as tokenizer_config.json does, without a model (as lm-eval asks)", async () => {
    const info = await rest("GET", "/tokenizer_info", { key });
    expect(info.status, JSON.stringify(info.body)).toBe(200);
    const body = info.body as Record<string, unknown>;
    expect(body).toMatchObject({ tokenizer_class: "PreTrainedTokenizerFast", model_max_length: expect.any(Number) });
    expect(typeof body.eos_token).toBe("string");
    expect(typeof body.chat_template).toBe("string");
    // The EOS text tokenizes to the one EOS token lm-eval takes as eot_token_id.
    const eos = (await rest("POST", "/tokenize", { key, body: { prompt: body.eos_token, add_special_tokens: false } })).body as TokenizeBody;
    expect(eos.count).toBe(1);
    const v1 = await rest("GET", "/v1/tokenizer_info?model=tiny-chat", { key });
    expect(v1.body).toEqual(body);
    const tools = await rest("GET", `/v1/tokenizer_info?model=${encodeURIComponent(modelName)}`, { key });
    expect(tools.status).toBe(200);
    expect((tools.body as Record<string, unknown>).chat_template).not.toEqual(body.chat_template);
  });
});

describe("over Connect", () => {
  it("serves the same service", async () => {
    const tokenizer = connectClient(Tokenizer, "connect-json", key);
    const answer = await tokenizer.tokenize({ model: "tiny-chat", prompt: "hello world", addSpecialTokens: false });
    const rest1 = (await rest("POST", "/tokenize", { key, body: { model: "tiny-chat", prompt: "hello world", add_special_tokens: false } })).body as TokenizeBody;
    expect(answer.tokens).toEqual(rest1.tokens);
    const back = await tokenizer.detokenize({ model: "tiny-chat", tokens: answer.tokens });
    expect(back.prompt).toBe("hello world");
  });
});
