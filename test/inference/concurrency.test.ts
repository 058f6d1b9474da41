// Continuous batching: concurrent streams share the engine's sequences, so together they produce
// more tokens per second than one stream alone. Only the ordering is asserted (shared machines
// are noisy); the figures are printed, and the benchmark measures them properly.
import OpenAI from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: OpenAI;
beforeAll(async () => {
  client = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: await createKey(uniqueEntity("batch")), maxRetries: 0 });
});

async function stream(index: number, tokens: number): Promise<number> {
  const chunks = await client.chat.completions.create({
    model: "tiny-chat",
    messages: [{ role: "user", content: `Story number ${index}` }],
    temperature: 0.8,
    seed: index,
    max_tokens: tokens,
    stream: true,
    stream_options: { include_usage: true },
    ...({ ignore_eos: true } as Record<string, unknown>),
  });
  let completion = 0;
  for await (const chunk of chunks) completion = chunk.usage?.completion_tokens ?? completion;
  return completion;
}

describe("concurrent streams", () => {
  it("all complete, and 8 at once finish sooner than the same 8 one after another", async () => {
    await stream(0, 8); // warm-up: model and context loaded
    const tokens = 32;
    // Short rounds, interleaved, summed: a busy neighbour on the shared machine slows both sides
    // alike instead of deciding the result.
    let sequential = 0;
    let concurrent = 0;
    for (let round = 0; round < 3; round++) {
      let started = performance.now();
      for (let i = 0; i < 8; i++) expect(await stream(100 * round + i, tokens)).toBe(tokens);
      sequential += performance.now() - started;
      started = performance.now();
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => stream(100 * round + i, tokens)));
      concurrent += performance.now() - started;
      expect(results).toEqual(Array(8).fill(tokens));
    }
    const rate = (ms: number) => (3 * 8 * tokens) / (ms / 1000);
    process.stdout.write(`tokens/s: one stream at a time ${rate(sequential).toFixed(0)}, eight at once ${rate(concurrent).toFixed(0)} (x${(sequential / concurrent).toFixed(2)})\n`);
    expect(concurrent).toBeLessThan(sequential);
  });
});
