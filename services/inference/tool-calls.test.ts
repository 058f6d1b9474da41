import { describe, expect, it } from "vitest";
import { ReplyPipeline } from "./reply-pipeline.js";

function run(parts: string[], maxToolCalls = 10) {
  const pipeline = new ReplyPipeline({ parseToolCalls: true, maxToolCalls });
  const results = [...parts.map((p) => pipeline.push(p)), pipeline.flush()];
  return {
    content: results.map((r) => r.content).join(""),
    reasoning: results.map((r) => r.reasoning).join(""),
    calls: results.flatMap((r) => r.calls).map(({ name, arguments: args }) => ({ name, args })),
  };
}

describe("tool calls in replies", () => {
  const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
  it("turns Hermes blocks into calls whatever the chunking", () => {
    const expected = { content: "Let me check.\n\n", reasoning: "", calls: [{ name: "get_weather", args: '{"city":"Paris"}' }, { name: "get_time", args: "{}" }] };
    expect(run([text])).toEqual(expected);
    expect(run([...text])).toEqual(expected);
  });
  it("keeps only the first call with parallel_tool_calls false, leaves malformed blocks as text", () => {
    expect(run([text], 1).calls).toEqual([{ name: "get_weather", args: '{"city":"Paris"}' }]);
    expect(run(["<tool_call>not json</tool_call>"])).toMatchObject({ content: "<tool_call>not json</tool_call>", calls: [] });
    expect(run(["<tool_call>{\"name\": \"x\""])).toMatchObject({ content: '<tool_call>{"name": "x"', calls: [] });
  });
  it("splits reasoning before tool calls", () => {
    expect(run(['<think>need weather</think><tool_call>{"name": "w", "arguments": {"q": 1}}</tool_call>'])).toEqual({ reasoning: "need weather", content: "", calls: [{ name: "w", args: '{"q":1}' }] });
  });
});
