// Chat completions through the openai SDK against the real server on the generated tiny model.
import { join } from "node:path";
import OpenAI from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { getLlama, type Token } from "node-llama-cpp";
import { rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: OpenAI;
let key = "";
const messages = [{ role: "user" as const, content: "Write a short poem about the sea." }];

beforeAll(async () => {
  key = await createKey(uniqueEntity("chat"));
  client = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: key, maxRetries: 0 });
});

type Extra = Record<string, unknown>;
const create = (body: Extra) =>
  client.chat.completions.create({ model: "tiny-chat", messages, ...body } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming) as Promise<
    OpenAI.ChatCompletion & { prompt_token_ids?: number[]; prompt_logprobs?: unknown[]; choices: (OpenAI.ChatCompletion.Choice & { token_ids?: number[]; stop_reason?: unknown })[] }
  >;

describe("chat completions on tiny-chat", () => {
  it("is deterministic under greedy decoding, unary and streamed alike", async () => {
    // Greedy, not seeded: seeded sampling repeats only for the same batch, and this server's engine
    // is shared with other test files (seeded.quiet.test.ts checks seeds on a quiet server).
    const greedy = await create({ temperature: 0, max_tokens: 16, ignore_eos: true, return_token_ids: true });
    const again = await create({ temperature: 0, max_tokens: 16, ignore_eos: true, return_token_ids: true });
    expect(again.choices[0]?.token_ids).toEqual(greedy.choices[0]?.token_ids);
    expect(greedy.choices[0]?.token_ids?.length).toBe(16);
    expect(greedy.choices[0]?.finish_reason).toBe("length");
    expect(greedy.usage).toMatchObject({ completion_tokens: 16, prompt_tokens: greedy.prompt_token_ids?.length });

    const stream = await client.chat.completions.create({
      model: "tiny-chat",
      messages,
      temperature: 0,
      max_tokens: 16,
      stream: true,
      stream_options: { include_usage: true },
      ...({ ignore_eos: true, return_token_ids: true } as Extra),
    });
    let text = "";
    const tokenIds: number[] = [];
    let usage: OpenAI.CompletionUsage | undefined | null;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0] as (OpenAI.ChatCompletionChunk.Choice & { token_ids?: number[] }) | undefined;
      text += choice?.delta.content ?? "";
      tokenIds.push(...(choice?.token_ids ?? []));
      finish = choice?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(tokenIds).toEqual(greedy.choices[0]?.token_ids);
    expect(text).toBe(greedy.choices[0]?.message.content);
    expect(finish).toBe("length");
    expect(usage?.completion_tokens).toBe(16);
  });

  it("reports log-probabilities equal to the log-softmax of the model's raw logits", async () => {
    await checkRawLogprobs({ temperature: 0 });
    // As vLLM reports them: before temperature, penalties and logit_bias.
    await checkRawLogprobs({ temperature: 0.5, top_k: 50, frequency_penalty: 0.5, logit_bias: { 101: 3 }, seed: 4 });
  });

  async function checkRawLogprobs(sampling: Extra) {
    const greedy = sampling.temperature === 0;
    const result = await create({ ...sampling, max_tokens: 6, ignore_eos: true, logprobs: true, top_logprobs: 3, return_token_ids: true });
    const choice = result.choices[0];
    const content = choice?.logprobs?.content ?? [];
    expect(content.length).toBe(6);
    // Independently: the same model file, evaluated here, full logits, log-softmax by hand.
    const llama = await getLlama({ gpu: false, build: "never", progressLogs: false });
    const model = await llama.loadModel({ modelPath: join(inject("dataDir"), "models", "tiny-chat.gguf") });
    const context = await model.createContext({ threads: 1, contextSize: 512, sequences: 1 });
    const sequence = context.getSequence();
    const prompt = (result.prompt_token_ids ?? []) as Token[];
    const generated = (choice?.token_ids ?? []) as Token[];
    const all = [...prompt, ...generated];
    const outputs = await sequence.controlledEvaluate(
      all.map((token, index) => (index >= prompt.length - 1 && index < all.length - 1 ? [token, { generateNext: { logits: true } }] : token)) as Parameters<typeof sequence.controlledEvaluate>[0],
    );
    for (let step = 0; step < generated.length; step++) {
      const logits = outputs[prompt.length - 1 + step]?.next.logits as Map<Token, number>;
      const values = [...logits.values()];
      const max = Math.max(...values);
      const logSum = Math.log(values.reduce((sum, v) => sum + Math.exp(v - max), 0)) + max;
      const expected = (logits.get(generated[step] as Token) as number) - logSum;
      // Batched and single evaluation differ in the last float32 digits.
      expect(content[step]?.logprob).toBeCloseTo(expected, 3);
      expect(content[step]?.top_logprobs.length).toBe(3);
      // Greedy: the chosen token is the most likely one.
      if (greedy) expect(content[step]?.top_logprobs[0]?.logprob).toBeCloseTo(content[step]?.logprob as number, 6);
    }
    await context.dispose();
    await model.dispose();
  }

  it("returns prompt_logprobs with a null first entry", async () => {
    const result = await create({ temperature: 0, max_tokens: 2, prompt_logprobs: 1, return_token_ids: true });
    const prompt = result.prompt_logprobs as (Record<string, { logprob: number; rank: number }> | null)[];
    expect(prompt.length).toBe(result.prompt_token_ids?.length);
    expect(prompt[0]).toBeNull();
    const second = prompt[1] as Record<string, { logprob: number; rank: number }>;
    expect(second[String(result.prompt_token_ids?.[1])]?.logprob).toBeLessThanOrEqual(0);
  });

  it("gives n choices", async () => {
    const result = await create({ temperature: 1, seed: 7, n: 3, max_tokens: 8, ignore_eos: true });
    expect(result.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(new Set(result.choices.map((c) => c.message.content)).size).toBeGreaterThan(1);
  });

  it("stops at stop strings and stop token ids", async () => {
    const free = await create({ temperature: 0, max_tokens: 24, ignore_eos: true, return_token_ids: true });
    const text = free.choices[0]?.message.content ?? "";
    const ids = free.choices[0]?.token_ids ?? [];
    const stop = text.slice(6, 9);
    const stopped = await create({ temperature: 0, max_tokens: 24, ignore_eos: true, stop: [stop] });
    expect(stopped.choices[0]?.message.content).toBe(text.slice(0, text.indexOf(stop)));
    expect(stopped.choices[0]?.finish_reason).toBe("stop");
    expect(stopped.choices[0]?.stop_reason).toBe(stop);
    const kept = await create({ temperature: 0, max_tokens: 24, ignore_eos: true, stop: stop, include_stop_str_in_output: true });
    expect(kept.choices[0]?.message.content).toBe(text.slice(0, text.indexOf(stop) + stop.length));

    const stopId = ids[4] as number;
    const byId = await create({ temperature: 0, max_tokens: 24, ignore_eos: true, stop_token_ids: [stopId], return_token_ids: true });
    expect(byId.choices[0]?.token_ids).toEqual(ids.slice(0, ids.indexOf(stopId)));
    expect(byId.choices[0]?.stop_reason).toBe(stopId);
  });

  it("applies logit_bias: -100 keeps a token out, +100 forces it", async () => {
    const free = await create({ temperature: 0, max_tokens: 8, ignore_eos: true, return_token_ids: true });
    const first = free.choices[0]?.token_ids?.[0] as number;
    const banned = await create({ temperature: 0, max_tokens: 8, ignore_eos: true, return_token_ids: true, logit_bias: { [first]: -100 } });
    expect(banned.choices[0]?.token_ids).not.toContain(first);
    const forcedToken = 101; // a plain byte token of the tiny vocabulary
    const forced = await create({ temperature: 0, max_tokens: 5, ignore_eos: true, return_token_ids: true, logit_bias: { [forcedToken]: 100 } });
    expect(forced.choices[0]?.token_ids).toEqual(Array(5).fill(forcedToken));
    // The same with log-probabilities (tokens drawn from raw logits here): still forced and kept
    // out, while the reported log-probability is the unbiased one.
    const forcedLogged = await create({ temperature: 0.8, seed: 2, max_tokens: 5, ignore_eos: true, return_token_ids: true, logprobs: true, logit_bias: { [forcedToken]: 100 } });
    expect(forcedLogged.choices[0]?.token_ids).toEqual(Array(5).fill(forcedToken));
    for (const entry of forcedLogged.choices[0]?.logprobs?.content ?? []) expect(entry.logprob).toBeLessThan(-0.5);
    // A token holding part of a UTF-8 character reports its own byte, not U+FFFD's.
    const partial = await create({ temperature: 0, max_tokens: 2, ignore_eos: true, return_token_ids: true, logprobs: true, top_logprobs: 1, logit_bias: { 226: 100 } });
    expect(partial.choices[0]?.token_ids).toEqual([226, 226]);
    expect(partial.choices[0]?.logprobs?.content?.map((entry) => entry.bytes)).toEqual([[0xe2], [0xe2]]);
    const bannedLogged = await create({ temperature: 1, seed: 2, max_tokens: 8, ignore_eos: true, return_token_ids: true, logprobs: true, allowed_token_ids: [97, 98, 99] });
    expect(bannedLogged.choices[0]?.token_ids?.every((t) => [97, 98, 99].includes(t))).toBe(true);
  });

  it("applies logit_bias to the end-of-turn token too, and holds it back until min_tokens", async () => {
    const imEnd = 767; // <|im_end|>, the tiny template's end of turn
    const ended = await create({ temperature: 0, max_tokens: 10, return_token_ids: true, logit_bias: { [imEnd]: 100 } });
    expect(ended.choices[0]).toMatchObject({ finish_reason: "stop", stop_reason: imEnd });
    expect(ended.choices[0]?.token_ids ?? []).toEqual([]);
    const held = await create({ temperature: 0, max_tokens: 10, min_tokens: 4, return_token_ids: true, logit_bias: { [imEnd]: 100 } });
    expect(held.choices[0]).toMatchObject({ finish_reason: "stop", stop_reason: imEnd });
    expect(held.choices[0]?.token_ids?.length).toBe(4);
    expect(held.choices[0]?.token_ids).not.toContain(imEnd);
    const banned = await create({ temperature: 0, max_tokens: 6, return_token_ids: true, logit_bias: { [imEnd]: -100, 101: 100 } });
    expect(banned.choices[0]).toMatchObject({ finish_reason: "length", token_ids: Array(6).fill(101) });
  });

  it("refuses what it cannot do, with the field named, and unknown or foreign models with 404", async () => {
    const priority = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, priority: 1 } });
    expect(priority.status).toBe(400);
    expect(priority.body).toMatchObject({ error: { message: expect.stringContaining("priority"), code: 400 } });
    const both = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, continue_final_message: true } });
    expect(both.body).toMatchObject({ error: { message: expect.stringContaining("continue_final_message and add_generation_prompt"), code: 400 } });
    const beam = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, use_beam_search: true, bad_words: ["x"] } });
    expect(beam.body).toMatchObject({ error: { message: expect.stringMatching(/^bad_words: not applied by beam search/), code: 400 } });
    const transfer = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages, kv_transfer_params: { remote: "x" } } });
    expect(transfer.body).toMatchObject({ error: { message: expect.stringMatching(/^kv_transfer_params:/), code: 400 } });
    const otherKey = await createKey(uniqueEntity("stranger"));
    const model = (await rest("POST", "/v1/preview/models", { key, body: { project: "chat", name: "mine", base_model: "tiny-chat" } })).body as { entity: string };
    const foreign = await rest("POST", "/v1/chat/completions", { key: otherKey, body: { model: `wandb-artifact:///${model.entity}/chat/mine`, messages } });
    expect(foreign).toMatchObject({ status: 404, body: { error: { message: `The model \`wandb-artifact:///${model.entity}/chat/mine\` does not exist.`, type: "NotFoundError", code: 404 } } });
    const own = await rest("POST", "/v1/chat/completions", { key, body: { model: `wandb-artifact:///${model.entity}/chat/mine`, messages, max_tokens: 2 } });
    expect(own.status).toBe(200);
  });

  it("ends a repeating generation early with repetition_detection", async () => {
    const forced = { temperature: 0, max_tokens: 40, ignore_eos: true, return_token_ids: true, logit_bias: { 101: 100 } };
    const runaway = await create(forced);
    expect(runaway.choices[0]?.token_ids?.length).toBe(40);
    expect(runaway.choices[0]?.finish_reason).toBe("length");
    const detected = await create({ ...forced, repetition_detection: { max_pattern_size: 4, min_count: 5 } });
    expect(detected.choices[0]?.token_ids).toEqual(Array(5).fill(101));
    expect(detected.choices[0]?.finish_reason).toBe("stop");
    expect(detected.choices[0]?.stop_reason).toBe("repetition");
  });

  it("reuses a cached prompt prefix within a cache_salt and never across salts", async () => {
    const long = [{ role: "user" as const, content: "Please remember this long context: " + "the quick brown fox jumps over the lazy dog. ".repeat(8) }];
    const ask = (salt: string) => create({ messages: long, temperature: 0, max_tokens: 2, cache_salt: salt });
    const salt = `salt-${Math.random()}`;
    const first = await ask(salt);
    const second = await ask(salt);
    expect(second.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(50);
    expect(second.choices[0]?.message.content).toBe(first.choices[0]?.message.content);
    const other = await ask(`other-${Math.random()}`);
    expect(other.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });

  it("puts a leading <think> block into reasoning, or drops it with include_reasoning false", async () => {
    const prefill = [{ role: "user", content: "2+2?" }, { role: "assistant", content: "<think>count them</think>" }];
    const body = { messages: prefill, add_generation_prompt: false, continue_final_message: true, echo: true, temperature: 0, max_tokens: 3, ignore_eos: true };
    const shown = await create(body);
    const message = shown.choices[0]?.message as { content: string; reasoning?: string | null };
    expect(message.reasoning).toBe("count them");
    expect(message.content.includes("<think>")).toBe(false);
    const hidden = await create({ ...body, include_reasoning: false });
    expect((hidden.choices[0]?.message as { reasoning?: string | null }).reasoning ?? null).toBeNull();
    expect(hidden.choices[0]?.message.content).toBe(message.content);
    // Streamed, reasoning arrives as delta.reasoning.
    const stream = await client.chat.completions.create({ model: "tiny-chat", ...(body as Record<string, unknown>), stream: true } as unknown as OpenAI.ChatCompletionCreateParamsStreaming);
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning?: string | null } | undefined;
      reasoning += delta?.reasoning ?? "";
      content += delta?.content ?? "";
    }
    expect(reasoning).toBe("count them");
    expect(content).toBe(message.content);
  });

  it("keeps special tokens only when asked, spaced apart as vLLM does", async () => {
    const forced = { temperature: 0, max_tokens: 3, logit_bias: { 766: 100 } }; // <|im_start|>
    expect((await create(forced)).choices[0]?.message.content).toBe("");
    expect((await create({ ...forced, skip_special_tokens: false })).choices[0]?.message.content).toBe("<|im_start|> <|im_start|> <|im_start|>");
    expect((await create({ ...forced, skip_special_tokens: false, spaces_between_special_tokens: false })).choices[0]?.message.content).toBe("<|im_start|><|im_start|><|im_start|>");
  });

  it("passes documents and chat_template_kwargs to the template", async () => {
    const rendered = await create({ chat_template: "{{ documents[0]['title'] }} and {{ flavor }}", documents: [{ title: "Moby Dick", text: "..." }], chat_template_kwargs: { flavor: "vanilla" }, max_tokens: 1, return_token_ids: true });
    const literal = await create({ chat_template: "Moby Dick and vanilla", max_tokens: 1, return_token_ids: true });
    expect(rendered.prompt_token_ids).toEqual(literal.prompt_token_ids);
  });
});
