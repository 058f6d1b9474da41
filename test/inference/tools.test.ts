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
