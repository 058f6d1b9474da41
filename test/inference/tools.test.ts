// Tool calls on the tool-capable tiny template (`tiny-tools`): tools reach the template, Hermes
// <tool_call> blocks come back as `tool_calls` (unary and streamed), tool results render for the
// next turn. The random tiny model cannot decide to call a tool, so the call is written by the
// client as the start of the reply (continue_final_message + echo), which exercises the same
// parsing the model's own output goes through.
import OpenAI from "openai";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createKey, uniqueEntity } from "../support/keys.js";

let client: OpenAI;
beforeAll(async () => {
  client = new OpenAI({ baseURL: `${inject("baseUrl")}/v1`, apiKey: await createKey(uniqueEntity("tools")), maxRetries: 0 });
});

const tools = [{ type: "function" as const, function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const body = {
  model: "tiny-tools",
  messages: [
    { role: "user", content: "Weather in Paris?" },
    { role: "assistant", content: call },
  ],
  tools,
  tool_choice: "auto",
  add_generation_prompt: false,
  continue_final_message: true,
  echo: true,
  temperature: 0,
  // Force the first generated token and stop on it, so the reply ends right after the call.
  logit_bias: { 101: 100 },
  stop: ["e"],
  max_tokens: 4,
};

describe("tool calls", () => {
  it("parses a Hermes tool call into tool_calls with finish_reason tool_calls", async () => {
    const result = await client.chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const choice = result.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.tool_calls).toEqual([{ id: expect.stringMatching(/^call_/), type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }]);
    expect(choice?.message.content).toBe("");
  });

  it("streams the call as delta.tool_calls", async () => {
    const stream = await client.chat.completions.create({ ...body, stream: true } as unknown as OpenAI.ChatCompletionCreateParamsStreaming);
    const calls: { id?: string; name?: string; arguments: string }[] = [];
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      for (const delta of choice?.delta.tool_calls ?? []) {
        const entry = (calls[delta.index] ??= { arguments: "" });
        entry.id ??= delta.id;
        entry.name ??= delta.function?.name;
        entry.arguments += delta.function?.arguments ?? "";
      }
      finish = choice?.finish_reason ?? finish;
    }
    expect(calls).toEqual([{ id: expect.stringMatching(/^call_/), name: "get_weather", arguments: '{"city":"Paris"}' }]);
    expect(finish).toBe("tool_calls");
  });

  it("renders the tool result of the next turn, and leaves calls as text with tool_choice none", async () => {
    const next = await client.chat.completions.create({
      model: "tiny-tools",
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: "sunny, 21 C" },
      ],
      tools,
      max_tokens: 2,
      ...({ return_token_ids: true } as Record<string, unknown>),
    });
    const prompt = (next as unknown as { prompt_token_ids: number[] }).prompt_token_ids;
    expect(prompt.length).toBeGreaterThan(60); // tools block, the call and the tool response are in the prompt
    const asText = await client.chat.completions.create({ ...body, tool_choice: "none" } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(asText.choices[0]?.message.tool_calls ?? []).toEqual([]);
    expect(asText.choices[0]?.message.content).toBe(call);
  });
});

describe("forced tool calls (grammar-constrained, as vLLM does them)", () => {
  const forcedTools = [
    { type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { enum: ["Paris", "Rome"] } }, required: ["city"], additionalProperties: false } } },
    { type: "function" as const, function: { name: "get_time", parameters: { type: "object", properties: { zone: { enum: ["UTC", "CET"] } }, required: ["zone"], additionalProperties: false } } },
  ];
  const ask = { model: "tiny-tools", messages: [{ role: "user" as const, content: "Weather in Paris?" }], tools: forcedTools, max_tokens: 80 };
  const validArguments = (name: string, args: string) => {
    const parsed = JSON.parse(args) as Record<string, unknown>;
    return name === "get_weather" ? ["Paris", "Rome"].includes(parsed.city as string) && Object.keys(parsed).length === 1 : ["UTC", "CET"].includes(parsed.zone as string) && Object.keys(parsed).length === 1;
  };

  it("a named function: the output is its arguments, finish_reason stop; streamed deltas add up to the same call", async () => {
    const named = { ...ask, tool_choice: { type: "function" as const, function: { name: "get_time" } } };
    const callOf = (result: OpenAI.ChatCompletion) => {
      const choice = result.choices[0];
      expect(choice?.finish_reason).toBe("stop");
      expect(choice?.message.content).toBe("");
      expect(choice?.message.tool_calls?.length).toBe(1);
      const call = choice?.message.tool_calls?.[0] as { id: string; function: { name: string; arguments: string } };
      expect(call.function.name).toBe("get_time");
      expect(validArguments("get_time", call.function.arguments)).toBe(true);
      return call;
    };
    const streamedCall = async (body: typeof named & { seed?: number; temperature?: number }) => {
      let streamed = { id: "", name: "", arguments: "" };
      for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
        for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
          expect(delta.index).toBe(0);
          streamed = { id: streamed.id || (delta.id ?? ""), name: streamed.name || (delta.function?.name ?? ""), arguments: streamed.arguments + (delta.function?.arguments ?? "") };
        }
      }
      expect(streamed.id).toMatch(/^call_/);
      expect(streamed.name).toBe("get_time");
      expect(validArguments("get_time", streamed.arguments)).toBe(true);
      return streamed;
    };
    for (const seed of [1, 2, 3]) {
      callOf(await client.chat.completions.create({ ...named, seed }));
      await streamedCall({ ...named, seed });
    }
    // The same call unary and streamed: compared under greedy decoding, since seeded sampling is
    // only reproducible for the same batch (other requests in the engine's batch move the logits).
    const greedy = callOf(await client.chat.completions.create({ ...named, temperature: 0 }));
    expect((await streamedCall({ ...named, temperature: 0 })).arguments).toBe(greedy.function.arguments);
    // With log-probabilities (the RL client's way of sampling): still a valid call, one entry per token.
    const logged = await client.chat.completions.create({ ...named, seed: 9, logprobs: true });
    const loggedCall = logged.choices[0]?.message.tool_calls?.[0] as { function: { arguments: string } };
    expect(validArguments("get_time", loggedCall.function.arguments)).toBe(true);
    expect(logged.choices[0]?.logprobs?.content?.length).toBe(logged.usage?.completion_tokens);
  });

  it('"required": one or more calls of the offered tools, finish_reason tool_calls; parallel_tool_calls false keeps it to one', async () => {
    for (const seed of [1, 2, 3]) {
      const result = await client.chat.completions.create({ ...ask, tool_choice: "required", seed, max_tokens: 200 });
      const choice = result.choices[0];
      const calls = (choice?.message.tool_calls ?? []) as { function: { name: string; arguments: string } }[];
      // The random model may go on listing calls until max_tokens: then only complete calls count.
      // (Which of the two it does depends on sampling, and seeded sampling is only reproducible for
      // the same batch: other requests in the engine's batch change the logits in the last bits.)
      expect(["tool_calls", "length"]).toContain(choice?.finish_reason);
      expect(choice?.message.content).toBe("");
      expect(calls.length).toBeGreaterThanOrEqual(1);
      for (const call of calls) expect(validArguments(call.function.name, call.function.arguments)).toBe(true);
      const single = await client.chat.completions.create({ ...ask, tool_choice: "required", seed, parallel_tool_calls: false });
      expect(single.choices[0]?.message.tool_calls?.length).toBe(1);
      expect(single.choices[0]?.finish_reason).toBe("tool_calls");
    }
    // A list the model closes itself ends with finish_reason tool_calls: "]" (byte token 93 of the
    // tiny vocabulary) is made the model's choice wherever the grammar allows it, i.e. right after
    // the first complete call, whatever else shares the batch.
    const closed = await client.chat.completions.create({ ...ask, tool_choice: "required", seed: 1, max_tokens: 200, logit_bias: { "93": 100 } });
    expect(closed.choices[0]?.finish_reason).toBe("tool_calls");
    const closedCalls = (closed.choices[0]?.message.tool_calls ?? []) as { function: { name: string; arguments: string } }[];
    expect(closedCalls.length).toBe(1);
    for (const call of closedCalls) expect(validArguments(call.function.name, call.function.arguments)).toBe(true);
  });

  it("refuses a forced call it cannot honour with a 400 that says why", async () => {
    const refusal = async (body: Record<string, unknown>) => {
      const error = await client.chat.completions.create({ ...ask, ...body } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      return (error as InstanceType<typeof OpenAI.BadRequestError>).message;
    };
    expect(await refusal({ tool_choice: { type: "function", function: { name: "nope" } } })).toContain('the function "nope" is not among the tools (get_weather, get_time)');
    expect(await refusal({ tool_choice: "required", tools: undefined })).toContain('tool_choice: "required" needs tools');
    expect(await refusal({ tool_choice: "required", response_format: { type: "json_object" } })).toContain("cannot be combined with structured outputs");
  });
});

