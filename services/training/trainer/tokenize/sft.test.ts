import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TrainingInputError } from "../api.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import { responseMask, tokenizeSftRow, turnMarkers } from "./sft.js";
import { tinyTokenizer, type TinyTokenizer } from "./test-fixtures.js";

let tiny: TinyTokenizer;
let tok: ChatTokenizer;

beforeAll(async () => {
  tiny = await tinyTokenizer();
  tok = tiny.tokenizer;
});
afterAll(() => tiny?.close());

/** The text of each trained span. */
function trainedText(tokens: number[], mask: boolean[]): string[] {
  const spans: number[][] = [];
  mask.forEach((on, i) => {
    if (!on) return;
    if (i > 0 && mask[i - 1]) spans[spans.length - 1]!.push(tokens[i]!);
    else spans.push([tokens[i]!]);
  });
  return spans.map((s) => tok.detokenize(s));
}

describe("tokenizeSftRow", () => {
  it("renders the whole conversation and trains every assistant turn with its end-of-turn tokens", () => {
    const row = {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello!" },
        { role: "user", content: "Bye" },
        { role: "assistant", content: "Goodbye." },
      ],
    };
    const { tokens, assistantMask } = tokenizeSftRow(tok, row, 3);
    expect(tok.detokenize(tokens)).toBe(tok.render(row.messages, null, false));
    expect(tokens).toEqual(tok.tokenize(tok.render(row.messages, null, false)));
    expect(trainedText(tokens, assistantMask)).toEqual(["Hello!<|im_end|>\n", "Goodbye.<|im_end|>\n"]);
  });

  it("trains tool turns between an assistant turn and the next user turn (ART's 'all' masking)", () => {
    const messages: JsonObject[] = [
      { role: "user", content: "Find it" },
      { role: "assistant", content: "Searching.", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c", name: "f", content: "found" },
      { role: "assistant", content: "Here." },
    ];
    const { tokens, assistantMask } = tokenizeSftRow(tok, { messages, tools: [{ name: "f", parameters: {} }] });
    expect(trainedText(tokens, assistantMask)).toEqual(["Searching.<|im_end|>\n<|im_start|>tool\nfound<|im_end|>\n<|im_start|>assistant\nHere.<|im_end|>\n"]);
  });

  it('with assistant_turns "last" trains only the final assistant turn: prompt with generation prompt, then the rest', () => {
    const messages = [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello!" },
      { role: "user", content: "Bye" },
      { role: "assistant", content: "Goodbye." },
    ];
    const all = tokenizeSftRow(tok, { messages }, 0, "all");
    const last = tokenizeSftRow(tok, { messages }, 0, "last");
    const prompt = tok.render(messages.slice(0, -1), null, true);
    expect(tok.detokenize(last.tokens)).toBe(tok.render(messages, null, false));
    expect(last.tokens.slice(0, tok.tokenize(prompt).length)).toEqual(tok.tokenize(prompt));
    expect(trainedText(last.tokens, last.assistantMask)).toEqual(["Goodbye.<|im_end|>\n"]);
    expect(trainedText(all.tokens, all.assistantMask)).toEqual(["Hello!<|im_end|>\n", "Goodbye.<|im_end|>\n"]);
  });

  it('with assistant_turns "last" cuts at a marker turn when the full rendering does not extend the generation prompt', async () => {
    // A template that adds a thinking prefix to the generation prompt only (as Qwen3's does).
    const template =
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n\n</think>\n\n{% endif %}";
    const thinking = await tiny.load({ chatTemplate: template });
    const messages = [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello!" },
    ];
    const last = tokenizeSftRow(thinking, { messages }, 0, "last");
    // The target starts where the marker turn's content does: the generation prompt, then the answer.
    expect(thinking.detokenize(last.tokens)).toBe("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n");
    expect(thinking.detokenize(last.tokens.filter((_, i) => last.assistantMask[i]))).toBe("Hello!<|im_end|>\n");
    expect(() => tokenizeSftRow(thinking, { messages: [...messages, { role: "user", content: "?" }] }, 2, "last")).toThrow(/SFT row 2/);
  });

  it("accepts Choices and null content", () => {
    const choice = { finish_reason: "stop", index: 0, logprobs: null, message: { role: "assistant", content: "Yes." } };
    const { tokens, assistantMask } = tokenizeSftRow(tok, { messages: [{ role: "user", content: null }, choice] });
    expect(tok.detokenize(tokens)).toBe("<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\nYes.<|im_end|>\n");
    expect(trainedText(tokens, assistantMask)).toEqual(["Yes.<|im_end|>\n"]);
  });

  it("rejects bad rows with their index", () => {
    const bad = (row: unknown, pattern: RegExp) => {
      expect(() => tokenizeSftRow(tok, row as never, 7)).toThrow(TrainingInputError);
      expect(() => tokenizeSftRow(tok, row as never, 7)).toThrow(pattern);
    };
    bad({ messages: [] }, /SFT row 7: "messages" must be a non-empty list/);
    bad({}, /SFT row 7: "messages"/);
    bad({ messages: [{ role: "user", content: "Hi" }] }, /SFT row 7: the last message must be the assistant's \(it is "user"\)/);
    bad({ messages: [{ content: "x" }, { role: "assistant", content: "y" }] }, /SFT row 7 messages\[0\]/);
    bad({ messages: [{ role: "assistant", content: "y" }], tools: "nope" }, /"tools" must be a list/);
  });
});

describe("markers", () => {
  it("detects the template family", () => {
    expect(turnMarkers(tok.templateSource).response).toBe("<|im_start|>assistant\n");
    expect(turnMarkers("{{ '<|start_header_id|>' }}").response).toBe("<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect(turnMarkers("<start_of_turn>").response).toBe("<start_of_turn>model\n");
    expect(turnMarkers("[INST]").instruction).toBe("[INST]");
    expect(() => turnMarkers("{{ messages }}")).toThrow(TrainingInputError);
  });

  it("labels from each response marker to the next instruction marker", () => {
    // tokens: Q a R x y Q b R z  (Q = [1, 2], R = [3])
    expect(responseMask([1, 2, 9, 3, 7, 8, 1, 2, 9, 3, 6], [1, 2], [3])).toEqual([false, false, false, false, true, true, false, false, false, false, true]);
  });
});
