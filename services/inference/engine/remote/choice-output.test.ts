// A remote replica's stop or end token: left out of the output as the embedded engine leaves it
// out, or kept (its id and log-probability, not its text) with includeStopToken, as Tinker's
// sampled sequences end with it.
import { describe, expect, it } from "vitest";
import type { GenerateRequest, TokenLogprobOut } from "../protocol.js";
import { ChoiceOutput } from "./choice-output.js";

const EOS = 99;

function request(overrides: Partial<GenerateRequest>): GenerateRequest {
  return { stop: [], includeStopStrInOutput: false, stopTokenIds: [], ignoreEos: false, repetitionDetection: null, ...overrides } as GenerateRequest;
}

const lp = (id: number): TokenLogprobOut => ({ token: `token_id:${id}`, logprob: -id / 100, bytes: [], top_logprobs: [] });

function run(req: GenerateRequest, pieces: { tokenIds: number[]; text: string }[], maxTokens = 100) {
  const out = { text: "", tokenIds: [] as number[], logprobs: [] as number[], finished: null as null | [string, number | string | null], verdicts: [] as string[] };
  const output = new ChoiceOutput(req, maxTokens, new Set([EOS]), true, {
    delta: (text, tokenIds, logprobs) => {
      out.text += text;
      out.tokenIds.push(...tokenIds);
      out.logprobs.push(...logprobs.map((item) => item.logprob));
    },
    finished: (reason, stop) => (out.finished = [reason, stop]),
  });
  for (const piece of pieces) out.verdicts.push(output.push({ ...piece, logprobs: piece.tokenIds.map(lp) }));
  return { ...out, completionTokens: output.completionTokens };
}

describe("ChoiceOutput's stop and end tokens", () => {
  it("leaves the end-of-sequence token out by default", () => {
    const out = run(request({}), [{ tokenIds: [1, 2], text: "ab" }, { tokenIds: [3, EOS], text: "c" }]);
    expect(out).toMatchObject({ text: "abc", tokenIds: [1, 2, 3], logprobs: [-0.01, -0.02, -0.03], finished: ["stop", EOS], completionTokens: 3 });
  });

  it("keeps it, with its log-probability, with includeStopToken", () => {
    const out = run(request({ includeStopToken: true }), [{ tokenIds: [1, 2], text: "ab" }, { tokenIds: [3, EOS], text: "c" }]);
    expect(out).toMatchObject({ text: "abc", tokenIds: [1, 2, 3, EOS], logprobs: [-0.01, -0.02, -0.03, -0.99], finished: ["stop", EOS], completionTokens: 4 });
    expect(out.verdicts).toEqual(["more", "drain"]);
  });

  it("keeps a stop token id the same way, and a first-token stop too", () => {
    const out = run(request({ includeStopToken: true, stopTokenIds: [7] }), [{ tokenIds: [7], text: "" }]);
    expect(out).toMatchObject({ tokenIds: [7], logprobs: [-0.07], finished: ["stop", 7] });
    const without = run(request({ stopTokenIds: [7] }), [{ tokenIds: [1, 7, 8], text: "a" }]);
    expect(without).toMatchObject({ tokenIds: [1], finished: ["stop", 7] });
  });

  it("treats the end token as any other with ignoreEos", () => {
    const out = run(request({ includeStopToken: true, ignoreEos: true }), [{ tokenIds: [EOS, EOS], text: "" }], 2);
    expect(out).toMatchObject({ tokenIds: [EOS, EOS], finished: ["length", null] });
  });
});
