import { describe, expect, it } from "vitest";
import { ReasoningSplitter } from "./reasoning.js";

function split(parts: string[]) {
  const splitter = new ReasoningSplitter();
  const out = { reasoning: "", content: "" };
  for (const part of [...parts.map((p) => splitter.push(p)), splitter.flush()]) {
    out.reasoning += part.reasoning;
    out.content += part.content;
  }
  return out;
}

describe("ReasoningSplitter", () => {
  it("splits a leading <think> block whatever the chunk boundaries", () => {
    const text = "<think>two plus two</think>\nfour";
    const whole = split([text]);
    expect(whole).toEqual({ reasoning: "two plus two", content: "four" });
    expect(split([...text])).toEqual(whole);
    expect(split(["<thi", "nk>two plus", " two</th", "ink>\nfo", "ur"])).toEqual(whole);
  });

  it("leaves replies without a leading <think> alone, and keeps an unclosed block as reasoning", () => {
    expect(split(["four <think>not reasoning</think>"])).toEqual({ reasoning: "", content: "four <think>not reasoning</think>" });
    expect(split(["<", "b>bold"])).toEqual({ reasoning: "", content: "<b>bold" });
    expect(split(["<think>still thinking"])).toEqual({ reasoning: "still thinking", content: "" });
  });
});
