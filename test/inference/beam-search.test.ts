// Beam search (use_beam_search) on a real model (SmolLM2-135M-Instruct), through the `openai` SDK
// with vLLM's extra fields: the n best beams, ordered by cumulative log-probability / (prompt +
// output tokens) ** length_penalty, whose reported log-probabilities are the model's own (checked
// against prompt_logprobs of the prompt followed by each beam, an independent evaluation).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const SMOLLM2 = resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const present = existsSync(SMOLLM2);

/** The vLLM fields the SDK's types do not know, sent as they are (Python's extra_body). */
interface BeamFields {
  use_beam_search?: boolean;
  length_penalty?: number;
  ignore_eos?: boolean;
  min_tokens?: number;
  return_token_ids?: boolean;
}
type ChatParams = OpenAI.ChatCompletionCreateParamsNonStreaming & BeamFields;
interface BeamChoice extends OpenAI.ChatCompletion.Choice {
  token_ids: number[] | null;
  stop_reason: number | string | null;
}
interface BeamCompletion extends OpenAI.ChatCompletion {
  choices: BeamChoice[];
  prompt_token_ids: number[] | null;
}

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Name a fruit." }];

describe.skipIf(!present)("beam search on SmolLM2", () => {
  let server: IsolatedServer;
  let client: OpenAI;

  beforeAll(async () => {
    server = await startIsolatedServer({ name: "beam-search", entity: "beams", env: { BASE_MODELS: `smollm2=${SMOLLM2}`, ENGINE_SEQUENCES: "4", ENGINE_CONTEXT_SIZE: "1024" } });
    client = new OpenAI({ baseURL: `${server.server.url}/v1`, apiKey: server.key, maxRetries: 0 });
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
  });

  const chat = async (params: Omit<ChatParams, "model" | "messages"> & { messages?: ChatParams["messages"] }) =>
    (await client.chat.completions.create({ model: "smollm2", messages, ...params } as ChatParams)) as BeamCompletion;

  /** A beam's cumulative log-probability (its reported ones, the ending token's included) and its length for the penalty. */
  const scored = (choice: BeamChoice) => {
    const entries = choice.logprobs?.content ?? [];
    const cum = entries.reduce((sum, entry) => sum + entry.logprob, 0);
    // An end-of-generation token is scored but not counted in the length (vLLM's get_beam_search_score).
    const length = entries.length - (typeof choice.stop_reason === "number" ? 1 : 0);
    return { cum, length };
  };
  const score = (choice: BeamChoice, promptTokens: number, lengthPenalty: number) => {
    const { cum, length } = scored(choice);
    return cum / Math.pow(promptTokens + length, lengthPenalty);
  };

  /**
   * Each beam's reported log-probabilities are those of the prompt followed by the beam, evaluated
   * from scratch (prompt_logprobs): per token within `max`, on average within `mean`.
   */
  const expectModelsOwnLogprobs = async (res: BeamCompletion, tolerance: { max: number; mean: number }) => {
    const prompt = res.prompt_token_ids as number[];
    for (const choice of res.choices) {
      const ending = typeof choice.stop_reason === "number" ? [choice.stop_reason] : [];
      const sequence = [...(choice.token_ids as number[]), ...ending];
      const reported = (choice.logprobs?.content ?? []).map((entry) => entry.logprob);
      expect(reported.length).toBe(sequence.length);
      const check = (await client.completions.create({ model: "smollm2", prompt: [...prompt, ...sequence], max_tokens: 1, prompt_logprobs: 0 } as OpenAI.CompletionCreateParamsNonStreaming)) as OpenAI.Completion & {
        choices: { prompt_logprobs: (Record<string, { logprob: number }> | null)[] }[];
      };
      const promptLogprobs = check.choices[0]?.prompt_logprobs ?? [];
      const deviations = sequence.map((token, i) => Math.abs(((promptLogprobs[prompt.length + i] as Record<string, { logprob: number }>)[String(token)]?.logprob as number) - (reported[i] as number)));
      expect(Math.max(...deviations), deviations.join(" ")).toBeLessThanOrEqual(tolerance.max);
      expect(deviations.reduce((a, b) => a + b, 0) / deviations.length, deviations.join(" ")).toBeLessThanOrEqual(tolerance.mean);
    }
  };

  it("returns n distinct beams best first, each scored by the model's own log-probabilities", async () => {
    const res = await chat({ n: 3, max_tokens: 16, logprobs: true, return_token_ids: true, use_beam_search: true });
    expect(res.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const texts = res.choices.map((c) => c.message.content);
    expect(new Set(texts).size).toBe(3);
    const prompt = res.prompt_token_ids as number[];
    expect(prompt.length).toBe(res.usage?.prompt_tokens);
    const scores = res.choices.map((c) => score(c, prompt.length, 1));
    for (let i = 1; i < scores.length; i++) expect(scores[i - 1]).toBeGreaterThanOrEqual(scores[i] as number);

    // A prompt this short gives the same numbers however it is batched.
    // The check evaluates prompt + beam as one batch, the beam was decoded a token at a time:
    // llama.cpp's kernels round differently per batch shape (up to about 1e-4 measured).
    await expectModelsOwnLogprobs(res, { max: 2e-4, mean: 5e-5 });
    expect(res.usage?.completion_tokens).toBe(res.choices.reduce((sum, c) => sum + (c.token_ids?.length ?? 0), 0));
  }, 120_000);

  it("branches beams of a long prompt by copying the whole sequence buffer, with the model's log-probabilities", async () => {
    // Past a quarter of the sequence's context (ENGINE_CONTEXT_SIZE 1024 here) a branching beam's
    // state is copied with llama_memory_seq_cp instead of a state file: ~300 prompt tokens.
    const story = Array.from({ length: 24 }, (_, i) => `Line ${i + 1}: the keeper climbed the stairs and lit the lamp.`).join(" ");
    const res = await chat({ messages: [{ role: "user", content: `${story} Summarise this.` }], n: 3, max_tokens: 12, logprobs: true, return_token_ids: true, use_beam_search: true });
    expect(res.usage?.prompt_tokens).toBeGreaterThan(256);
    expect(new Set(res.choices.map((c) => c.message.content)).size).toBe(3);
    // Evaluated from scratch in one batch, a prompt this long and the beam give log-probabilities
    // that differ from those of the beam's own evaluation (prompt, then a token per step) by up to
    // ~0.3 and ~0.03 on average: measured on the plain greedy reply, no beams, too. A beam continuing
    // from a wrong cache is off by nats. The copy itself is exact (sequence-fork.test.ts).
    await expectModelsOwnLogprobs(res, { max: 0.6, mean: 0.12 });
  }, 120_000);

  it("with one beam gives the greedy output", async () => {
    // length_penalty 0 ranks by log-probability alone, so one beam is exactly greedy, its end included.
    // One after the other: run together, the two would share decode batches, whose numbers differ
    // by thousandths from a lone sequence's and can tip a near tie between two tokens.
    const beam = await chat({ n: 1, max_tokens: 24, use_beam_search: true, length_penalty: 0 });
    const greedy = await chat({ max_tokens: 24, temperature: 0 });
    expect(beam.choices[0]?.message.content).toBe(greedy.choices[0]?.message.content);
    expect(beam.choices[0]?.finish_reason).toBe(greedy.choices[0]?.finish_reason);
    // Without an end to choose, the default length penalty gives the same single path.
    const longBeam = await chat({ n: 1, max_tokens: 20, use_beam_search: true, ignore_eos: true });
    const longGreedy = await chat({ max_tokens: 20, temperature: 0, ignore_eos: true });
    expect(longBeam.choices[0]?.message.content).toBe(longGreedy.choices[0]?.message.content);
  }, 120_000);

  it("orders by length_penalty, which changes the order where lengths differ", async () => {
    const ranked = async (lengthPenalty: number) => {
      const res = await chat({ n: 4, max_tokens: 24, logprobs: true, use_beam_search: true, length_penalty: lengthPenalty });
      const promptTokens = res.usage?.prompt_tokens as number;
      const scores = res.choices.map((c) => score(c, promptTokens, lengthPenalty));
      for (let i = 1; i < scores.length; i++) expect(scores[i - 1]).toBeGreaterThanOrEqual(scores[i] as number);
      return res.choices;
    };
    const short = await ranked(0);
    const long = await ranked(10);
    const lengths = short.map((c) => scored(c).length);
    expect(new Set(lengths).size).toBeGreaterThan(1);
    // A larger penalty divides by a larger power of the length: the longer beams move up.
    expect(long[0]?.message.content).not.toBe(short[0]?.message.content);
    expect(scored(long[0] as BeamChoice).length).toBeGreaterThan(scored(short[0] as BeamChoice).length);
  }, 120_000);

  it("streams the beams as the unary reply has them", async () => {
    const unary = await chat({ n: 2, max_tokens: 12, use_beam_search: true });
    const stream = await client.chat.completions.create({ model: "smollm2", messages, n: 2, max_tokens: 12, stream: true, use_beam_search: true } as OpenAI.ChatCompletionCreateParamsStreaming);
    const texts = ["", ""];
    const finishes: (string | null)[] = [null, null];
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        texts[choice.index] += choice.delta.content ?? "";
        if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
      }
    }
    expect(texts).toEqual(unary.choices.map((c) => c.message.content));
    expect(finishes).toEqual(unary.choices.map((c) => c.finish_reason));
  }, 120_000);

  it("ends beams on stop strings, and on nothing before min_tokens", async () => {
    const stopped = await chat({ n: 3, max_tokens: 24, use_beam_search: true, stop: [" is"] });
    for (const choice of stopped.choices) {
      expect(choice.message.content).not.toContain(" is");
      if (choice.finish_reason === "stop") expect([" is", 2]).toContain(choice.stop_reason);
    }
    expect(stopped.choices.some((c) => c.stop_reason === " is")).toBe(true);
    // A beam ended by its very first token still reports that token's log-probability.
    const first = (await chat({ max_tokens: 1, temperature: 0, return_token_ids: true })).choices[0]?.token_ids?.[0] as number;
    const endsAtOnce = await chat({ n: 2, max_tokens: 8, use_beam_search: true, stop_token_ids: [first], logprobs: true, return_token_ids: true } as Omit<ChatParams, "model" | "messages">);
    const immediate = endsAtOnce.choices.find((c) => c.stop_reason === first);
    expect(immediate?.token_ids ?? []).toEqual([]);
    expect(immediate?.logprobs?.content).toHaveLength(1);
    const atLeast = await chat({ n: 3, max_tokens: 24, use_beam_search: true, min_tokens: 14, return_token_ids: true });
    for (const choice of atLeast.choices) expect(choice.token_ids?.length).toBeGreaterThanOrEqual(14);
  }, 120_000);

  it("branches beams while other requests keep the context generating", async () => {
    // Copying a beam's state takes the context's lock, which the decode loop holds while any
    // sequence generates: the beam search must get it between batches, not after the others end.
    const long = { model: "smollm2", messages, max_tokens: 400, ignore_eos: true, temperature: 1, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming;
    let ended = 0;
    const streams = await Promise.all([0, 1].map(() => client.chat.completions.create(long)));
    const firstText: Promise<void>[] = [];
    const reading = streams.map((stream) => {
      let sawText: () => void = () => {};
      firstText.push(new Promise<void>((resolve) => (sawText = resolve)));
      return (async () => {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) sawText();
        ended++;
      })();
    });
    await Promise.all(firstText);
    // The two streams hold two of the four sequences; the beams take the other two.
    const beams = await chat({ n: 2, max_tokens: 24, use_beam_search: true });
    expect(beams.choices).toHaveLength(2);
    expect(ended).toBe(0);
    await Promise.all(reading);
  }, 180_000);

  it("runs on legacy completions too", async () => {
    const res = await client.completions.create({ model: "smollm2", prompt: "The capital of France is", n: 2, max_tokens: 8, use_beam_search: true } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(res.choices).toHaveLength(2);
    expect(res.choices[0]?.text).not.toBe(res.choices[1]?.text);
  }, 120_000);

  it("refuses what beam search cannot apply, naming it", async () => {
    const refused = async (params: Omit<ChatParams, "model" | "messages">) => {
      const error = await chat(params).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      return (error as Error).message;
    };
    expect(await refused({ use_beam_search: true, response_format: { type: "json_object" } })).toMatch(/structured outputs.*beam search/);
    expect(await refused({ use_beam_search: true, logit_bias: { "42": 5 } })).toMatch(/logit_bias: not applied by beam search/);
    expect(await refused({ use_beam_search: true, frequency_penalty: 0.5 })).toMatch(/frequency_penalty/);
    expect(await refused({ use_beam_search: true, n: 5 })).toMatch(/n: Input should be less than or equal to \d+ \(the sequences this deployment runs in parallel for one request, ENGINE_SEQUENCES\)/);
  }, 60_000);
});
