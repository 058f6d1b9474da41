// The scoring path of /v1/completions as lm-evaluation-harness drives it (prompt = context +
// continuation, echo, logprobs, max_tokens 1 or 0, temperature 0), on SmolLM2-135M-Instruct over
// HTTP with the `openai` SDK, and once over Connect: vLLM's shape (every generated token listed,
// an end-of-sequence one included, so dropping the last entry drops the generated token), echoed
// log-probabilities equal to the same tokens' log-probabilities obtained another way (generated,
// or as a token-id prompt), lists of prompts, token-id prompts, streaming and usage.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const SMOLLM2 = resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const present = existsSync(SMOLLM2);
/** SmolLM2-Instruct's end-of-sequence token. */
const EOS = 2;
const EOS_TEXT = "<|im_end|>";
/** Two evaluations of the same tokens (batched or one at a time, other thread splits) round differently; equal up to this. */
const CLOSE = 2e-3;

interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}
interface ScoredChoice {
  index: number;
  text: string;
  finish_reason: string;
  stop_reason: number | string | null;
  logprobs: LegacyLogprobs | null;
  token_ids?: number[] | null;
  prompt_token_ids?: number[] | null;
}
interface Scored {
  choices: ScoredChoice[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: { cached_tokens: number } | null };
}

const CONTEXT = "Question: What does a thermometer measure?\nAnswer:";
const ANSWERS = [" temperature", " the weight of a stone", " how loud a sound is"];

describe.skipIf(!present)("scoring on /v1/completions (SmolLM2)", () => {
  let server: IsolatedServer;
  let client: OpenAI;

  beforeAll(async () => {
    server = await startIsolatedServer({ name: "scoring", entity: "scorer", env: { BASE_MODELS: `smollm2=${SMOLLM2}`, ENGINE_SEQUENCES: "4", ENGINE_CONTEXT_SIZE: "1024" } });
    client = new OpenAI({ baseURL: `${server.server.url}/v1`, apiKey: server.key, maxRetries: 0 });
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
  });

  const score = async (params: Record<string, unknown>) => (await client.completions.create({ model: "smollm2", temperature: 0, ...params } as unknown as OpenAI.CompletionCreateParamsNonStreaming)) as unknown as Scored;
  const logprobsOf = (choice: ScoredChoice | undefined) => choice?.logprobs as LegacyLogprobs;
  /** Token ids of a text prompt, as the server tokenizes it. */
  const tokenIds = async (prompt: string) => (await score({ prompt, max_tokens: 0, echo: true, return_token_ids: true })).choices[0]?.prompt_token_ids as number[];

  /** The legacy shape's invariants: one entry per token everywhere, offsets walking the tokens, each token in its own top. */
  const expectConsistent = (lp: LegacyLogprobs) => {
    const n = lp.tokens.length;
    expect([lp.token_logprobs.length, lp.top_logprobs.length, lp.text_offset.length]).toEqual([n, n, n]);
    expect(lp.token_logprobs[0]).toBeNull();
    expect(lp.top_logprobs[0]).toBeNull();
    lp.text_offset.forEach((offset, i) => expect(offset).toBe(i === 0 ? 0 : (lp.text_offset[i - 1] as number) + (lp.tokens[i - 1] as string).length));
    for (let i = 1; i < n; i++) expect((lp.top_logprobs[i] as Record<string, number>)[lp.tokens[i] as string]).toBeCloseTo(lp.token_logprobs[i] as number, 6);
  };

  it("lists an end-of-sequence generated token (finish_reason stop), so lm-eval's dropped last entry is the generated one", async () => {
    const prompt = CONTEXT + ANSWERS[0];
    const ids = await tokenIds(prompt);
    // logit_bias makes the end token the greedy one; log-probabilities stay the raw model's.
    const ended = await score({ prompt, echo: true, logprobs: 1, max_tokens: 1, logit_bias: { [EOS]: 100 }, return_token_ids: true });
    const choice = ended.choices[0] as ScoredChoice;
    const lp = logprobsOf(choice);
    expect(choice.finish_reason).toBe("stop");
    expect(choice.text).toBe(prompt);
    expect(choice.token_ids).toEqual([EOS]);
    expect(lp.tokens).toHaveLength(ids.length + 1);
    expect(lp.tokens.at(-1)).toBe(EOS_TEXT);
    expectConsistent(lp);
    expect(ended.usage).toMatchObject({ prompt_tokens: ids.length, completion_tokens: 1, total_tokens: ids.length + 1 });

    // Without the end token's entry, the prompt's entries are those of pure scoring (max_tokens 0).
    const scored = logprobsOf((await score({ prompt, echo: true, logprobs: 1, max_tokens: 0 })).choices[0]);
    expect(lp.tokens.slice(0, -1)).toEqual(scored.tokens);
    lp.token_logprobs.slice(0, -1).forEach((value, i) => (i === 0 ? expect(value).toBeNull() : expect(value).toBeCloseTo(scored.token_logprobs[i] as number, 6)));
    // The end token's log-probability is the model's: the same as scoring prompt + end token.
    const withEnd = logprobsOf((await score({ prompt: [...ids, EOS], echo: true, logprobs: 1, max_tokens: 0 })).choices[0]);
    expect(Math.abs((lp.token_logprobs.at(-1) as number) - (withEnd.token_logprobs.at(-1) as number))).toBeLessThan(CLOSE);
  });

  it("gives a generated token the log-probability the echo of prompt + that token gives it, and the same as without echo", async () => {
    const prompt = CONTEXT + ANSWERS[1];
    const ids = await tokenIds(prompt);
    const generated = await score({ prompt, echo: true, logprobs: 1, max_tokens: 1, return_token_ids: true });
    const choice = generated.choices[0] as ScoredChoice;
    const lp = logprobsOf(choice);
    expectConsistent(lp);
    expect(lp.tokens).toHaveLength(ids.length + 1);
    const token = (choice.token_ids as number[])[0] as number;
    // Greedy: the generated token is the top 1 of its step.
    const top = lp.top_logprobs.at(-1) as Record<string, number>;
    expect(Math.max(...Object.values(top))).toBeCloseTo(lp.token_logprobs.at(-1) as number, 6);

    const rescored = logprobsOf((await score({ prompt: [...ids, token], echo: true, logprobs: 1, max_tokens: 0 })).choices[0]);
    expect(rescored.tokens).toEqual(lp.tokens);
    expect(Math.abs((rescored.token_logprobs.at(-1) as number) - (lp.token_logprobs.at(-1) as number))).toBeLessThan(CLOSE);

    const plain = await score({ prompt, logprobs: 1, max_tokens: 1, return_token_ids: true });
    expect(plain.choices[0]?.token_ids).toEqual([token]);
    expect(Math.abs((logprobsOf(plain.choices[0]).token_logprobs[0] as number) - (lp.token_logprobs.at(-1) as number))).toBeLessThan(CLOSE);
    expect(logprobsOf(plain.choices[0]).text_offset).toEqual([0]);
  });

  it("scores with max_tokens 0 and echo (the prompt only), and refuses max_tokens 0 without echo as vLLM does", async () => {
    const prompt = CONTEXT + ANSWERS[2];
    const ids = await tokenIds(prompt);
    const result = await score({ prompt, echo: true, logprobs: 2, max_tokens: 0 });
    const choice = result.choices[0] as ScoredChoice;
    expect(choice.text).toBe(prompt);
    expect(choice.finish_reason).toBe("length");
    const lp = logprobsOf(choice);
    expect(lp.tokens).toHaveLength(ids.length);
    expect(lp.tokens.join("")).toBe(prompt);
    expectConsistent(lp);
    // The top 2 (sorted by llama.cpp) agree with the top 1 read without sorting.
    const one = logprobsOf((await score({ prompt, echo: true, logprobs: 1, max_tokens: 0 })).choices[0]);
    lp.token_logprobs.forEach((value, i) => (i === 0 ? expect(one.token_logprobs[0]).toBeNull() : expect(Math.abs((one.token_logprobs[i] as number) - (value as number))).toBeLessThan(CLOSE)));
    for (let i = 1; i < ids.length; i++) {
      const two = lp.top_logprobs[i] as Record<string, number>;
      expect(Object.keys(two).length).toBeGreaterThanOrEqual(2);
      expect(Math.abs(Math.max(...Object.values(one.top_logprobs[i] as Record<string, number>)) - Math.max(...Object.values(two)))).toBeLessThan(CLOSE);
    }
    expect(result.usage).toMatchObject({ prompt_tokens: ids.length, completion_tokens: 0, total_tokens: ids.length });
    expect(result.usage.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);

    const refused = await client.completions.create({ model: "smollm2", prompt, max_tokens: 0 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as Error).message).toMatch(/max_tokens/);
  });

  it("scores a list of prompts (text and token ids) in one request, each as it scores alone", async () => {
    const prompts = ANSWERS.map((answer) => CONTEXT + answer);
    const alone = await Promise.all(prompts.map(async (prompt) => (await score({ prompt, echo: true, logprobs: 1, max_tokens: 1 })).choices[0] as ScoredChoice));
    const batch = await score({ prompt: prompts, echo: true, logprobs: 1, max_tokens: 1 });
    const ids = await Promise.all(prompts.map(tokenIds));
    const byIds = await score({ prompt: ids, echo: true, logprobs: 1, max_tokens: 1 });
    for (const result of [batch, byIds]) {
      expect(result.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
      expect(result.usage.prompt_tokens).toBe(ids.reduce((sum, list) => sum + list.length, 0));
      expect(result.usage.completion_tokens).toBe(3);
      result.choices.forEach((choice, i) => {
        const mine = logprobsOf(choice);
        const single = logprobsOf(alone[i]);
        expectConsistent(mine);
        expect(choice.text).toBe(alone[i]?.text);
        expect(mine.tokens).toEqual(single.tokens);
        mine.token_logprobs.forEach((value, t) => (t === 0 ? expect(value).toBeNull() : expect(Math.abs((value as number) - (single.token_logprobs[t] as number))).toBeLessThan(CLOSE)));
      });
    }
  });

  it("answers long lists of prompts to the end, one list after another", async () => {
    // A list runs a few prompts at a time; when every running prompt ended while the response was
    // being written, nothing started the rest and the request hung for good (bench:scoring found it
    // within three lists of 40).
    const prompts = Array.from({ length: 40 }, (_, i) => `${CONTEXT} item ${i}${ANSWERS[i % 3]}`);
    for (const scoring of [true, false, true]) {
      const answer = (await client.completions.create({ model: "smollm2", prompt: prompts, max_tokens: 1, temperature: 0, ...(scoring ? { echo: true, logprobs: 1 } : {}) }, { timeout: 90_000 })) as unknown as Scored;
      expect(answer.choices.map((choice) => choice.index).sort((a, b) => a - b)).toEqual(prompts.map((_, i) => i));
      if (scoring) expect(answer.choices.every((choice) => (choice.logprobs?.token_logprobs.length ?? 0) > 10)).toBe(true);
    }
  }, 300_000);

  it("streams the same tokens, log-probabilities, offsets and usage as the unary response, the end token included", async () => {
    const prompt = CONTEXT + ANSWERS[0];
    const params = { prompt, echo: true, logprobs: 1, max_tokens: 1, logit_bias: { [EOS]: 100 } };
    const unary = await score(params);
    const stream = await client.completions.create({ model: "smollm2", temperature: 0, ...params, stream: true, stream_options: { include_usage: true } } as unknown as OpenAI.CompletionCreateParamsStreaming);
    const joined: LegacyLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    let text = "";
    let finish: string | null = null;
    let usage: Scored["usage"] | undefined;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage as Scored["usage"];
      for (const choice of chunk.choices) {
        text += choice.text;
        finish = choice.finish_reason ?? finish;
        const lp = choice.logprobs as LegacyLogprobs | null;
        if (!lp) continue;
        joined.tokens.push(...lp.tokens);
        joined.token_logprobs.push(...lp.token_logprobs);
        joined.top_logprobs.push(...lp.top_logprobs);
        joined.text_offset.push(...lp.text_offset);
      }
    }
    const expected = logprobsOf(unary.choices[0]);
    expect(text).toBe(unary.choices[0]?.text);
    expect(finish).toBe("stop");
    expect(joined.tokens).toEqual(expected.tokens);
    expect(joined.tokens.at(-1)).toBe(EOS_TEXT);
    expect(joined.text_offset).toEqual(expected.text_offset);
    joined.token_logprobs.forEach((value, i) => (i === 0 ? expect(value).toBeNull() : expect(value).toBeCloseTo(expected.token_logprobs[i] as number, 6)));
    expect(usage).toMatchObject({ prompt_tokens: unary.usage.prompt_tokens, completion_tokens: 1 });
  });

  it("answers the same over Connect (one endpoint behind REST and RPC)", async () => {
    const prompt = CONTEXT + ANSWERS[0];
    const rest = logprobsOf((await score({ prompt, echo: true, logprobs: 1, max_tokens: 1, logit_bias: { [EOS]: 100 } })).choices[0]);
    const transport = createConnectTransport({
      baseUrl: server.server.url,
      httpVersion: "1.1",
      interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${server.key}`), next(req))],
    });
    const rpc = await createClient(Inference, transport).createCompletion({
      model: "smollm2",
      prompt: { kind: { case: "stringValue", value: prompt } },
      echo: true,
      logprobs: 1,
      maxTokens: 1,
      temperature: 0,
      logitBias: { [EOS]: 100 },
    });
    const choice = rpc.choices[0];
    expect(choice?.finishReason).toBe("stop");
    expect(choice?.logprobs?.tokens).toEqual(rest.tokens);
    expect(choice?.logprobs?.textOffset).toEqual(rest.text_offset);
    expect(rpc.usage?.completionTokens).toBe(1);
  });
});
