import { describe, expect, it } from "vitest";
import { joinToolCalls, ReplyPipeline } from "./reply-pipeline.js";

function run(parts: string[], maxToolCalls = 10) {
  const pipeline = new ReplyPipeline({ kind: "auto", maxCalls: maxToolCalls });
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

describe("forced tool calls in replies", () => {
  const whole = (mode: ConstructorParameters<typeof ReplyPipeline>[0], parts: string[]) => {
    const pipeline = new ReplyPipeline(mode);
    const results = [...parts.map((p) => pipeline.push(p)), pipeline.flush()];
    return { content: results.map((r) => r.content).join(""), deltas: results.flatMap((r) => r.calls), calls: joinToolCalls(results.flatMap((r) => r.calls)) };
  };

  it("reads a named function's output as its arguments, announced once and then growing", () => {
    const { content, deltas, calls } = whole({ kind: "named", name: "get_weather" }, ['{"ci', 'ty": ', '"Paris"}']);
    expect(content).toBe("");
    expect(deltas.map((d) => [d.index, d.id !== undefined, d.name, d.arguments])).toEqual([
      [0, true, "get_weather", '{"ci'],
      [0, false, undefined, 'ty": '],
      [0, false, undefined, '"Paris"}'],
    ]);
    expect(calls).toEqual([{ id: expect.stringMatching(/^call_/), name: "get_weather", arguments: '{"city": "Paris"}' }]);
    expect(whole({ kind: "named", name: "f" }, []).calls).toEqual([{ id: expect.any(String), name: "f", arguments: "" }]);
  });

  it("reads a required list call by call, whatever the chunking, strings with brackets included", () => {
    const text = '[{"name": "w", "parameters": {"q": "a}]\\"{"}}, {"name": "t", "parameters": {}}]';
    for (const parts of [[text], [...text]]) {
      const { content, calls } = whole({ kind: "required", maxCalls: 10 }, parts);
      expect(content).toBe("");
      expect(calls.map((c) => [c.name, c.arguments])).toEqual([["w", '{"q":"a}]\\"{"}'], ["t", "{}"]]);
    }
    expect(whole({ kind: "required", maxCalls: 10 }, ['[{"name": "w", "parameters": {"q": 1}}, {"name": "t", "par']).calls.map((c) => c.name)).toEqual(["w"]);
    expect(whole({ kind: "required", maxCalls: 1 }, [text]).calls.map((c) => c.name)).toEqual(["w"]);
  });
});
