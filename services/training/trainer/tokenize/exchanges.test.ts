// ART 0.5.23 trajectories: captured `exchanges` (chat completions, legacy completions, Responses,
// Anthropic messages) train as their messages_and_choices equivalents, or on the server's own
// token ids when the responses carry them; Choices carrying those ids are assembled as ART 0.5.23
// does (art/preprocessing/tokenize.py assemble_vllm_training_sequences).
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPrompt } from "../../../inference/engine/llama/prompt.js";
import type { GenerateRequest } from "../../../inference/engine/protocol.js";
import { TrainingInputError } from "../api.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import { tokenizeTrajectoryGroups, type RlRow, type RlTokenizeOptions } from "./rl-rows.js";
import { tinyTokenizer, type TinyTokenizer } from "./test-fixtures.js";

const IM_END = 767;
const MODEL = "wandb-artifact:///team/proj/agent:step3";
const TRAINED = { entity: "team", project: "proj", name: "agent" };
let tiny: TinyTokenizer;
let tok: ChatTokenizer;

beforeAll(async () => {
  tiny = await tinyTokenizer();
  tok = tiny.tokenizer;
});
afterAll(() => tiny?.close());

const OPTIONS: RlTokenizeOptions = { allowTrainingWithoutLogprobs: false, scaleRewards: true, trainedModel: TRAINED };

function enginePrompt(messages: JsonObject[], tools: JsonObject[] | null = null): number[] {
  const request = { messages, tools, documents: null, chatTemplate: null, chatTemplateKwargs: {}, addGenerationPrompt: true, continueFinalMessage: false, echo: false, addSpecialTokens: false, truncatePromptTokens: null } as unknown as GenerateRequest;
  return buildPrompt(tok.model, request, 1 << 20).tokens.map(Number);
}

const sampled = (text: string) => [...tok.tokenize(text, false), IM_END];
const entries = (ids: number[]) => ids.map((id, i) => ({ token: `token_id:${id}`, logprob: -0.1 * (i + 1), bytes: null, top_logprobs: [] }));

/** A chat Choice as a response carries it: logprobs entries, and token_ids when asked for. */
function chatChoice(content: string, ids: number[], extra: JsonObject = {}): JsonObject {
  return { finish_reason: "stop", index: 0, logprobs: { content: entries(ids), refusal: null }, message: { role: "assistant", content }, ...extra };
}

/** Rows of one group: the trajectory under test (reward 1) against an empty one (reward 0). */
function rowsOf(trajectory: JsonObject, options: RlTokenizeOptions = OPTIONS): RlRow[] {
  return tokenizeTrajectoryGroups(tok, [{ trajectories: [{ ...trajectory, reward: 1 }, { reward: 0 }] }], options);
}

const shape = (rows: RlRow[]) => rows.map((r) => ({ tokens: r.tokens, mask: r.assistantMask, logprobs: r.oldLogprobs }));

const USER = { role: "user", content: "Hi there" };
const USER2 = { role: "user", content: "More?" };

describe("chat_completions exchanges", () => {
  it("with the server's token ids: one history per lineage, each sampled token trained once", () => {
    // Synthetic ids: turn 2's prompt continues turn 1's prompt and output.
    const turn1 = { request: { model: MODEL, messages: [USER] }, response: { prompt_token_ids: [1, 2, 3], choices: [chatChoice("a", [10, 11], { token_ids: [10, 11] })] }, start_time: "2026-01-01T00:00:01Z", end_time: "2026-01-01T00:00:02Z" };
    const turn2 = {
      request: { model: MODEL, messages: [USER, { role: "assistant", content: "a" }, USER2] },
      response: { prompt_token_ids: [1, 2, 3, 10, 11, 4, 5], choices: [chatChoice("b", [12], { token_ids: [12] })] },
      start_time: "2026-01-01T00:00:03Z",
      end_time: "2026-01-01T00:00:04Z",
    };
    // A judge's exchange captured beside them is not the trained model's: left out.
    const judge = { request: { model: "gpt-judge", messages: [USER] }, response: { prompt_token_ids: [9], choices: [chatChoice("ok", [9], { token_ids: [9] })] } };
    // Sent out of order: taken by start_time.
    const rows = rowsOf({ exchanges: { chat_completions: [turn2, judge, turn1] } });
    expect(shape(rows)).toEqual([
      { tokens: [1, 2, 3, 10, 11, 4, 5, 12], mask: [false, false, false, true, true, false, false, true], logprobs: [null, null, null, -0.1, -0.2, null, null, -0.1] },
    ]);
  });

  it("with several choices: each starts a history; the shared part trains in the first only", () => {
    const turn1 = { request: { model: MODEL, messages: [USER] }, response: { prompt_token_ids: [1, 2], choices: [chatChoice("a", [10], { token_ids: [10] }), { ...chatChoice("b", [20], { token_ids: [20] }), index: 1 }] } };
    const turn2 = { request: { model: MODEL, messages: [USER, { role: "assistant", content: "a" }, USER2] }, response: { prompt_token_ids: [1, 2, 10, 3], choices: [chatChoice("c", [30], { token_ids: [30] })] } };
    const rows = rowsOf({ exchanges: { chat_completions: [turn1, turn2] } });
    expect(rows.map((r) => [r.tokens, r.assistantMask])).toEqual([
      [
        [1, 2, 10, 3, 30],
        [false, false, true, false, true],
      ],
      [
        [1, 2, 20],
        [false, false, true],
      ],
    ]);
  });

  it("without token ids: trains as the messages_and_choices equivalent (request messages as context, each output a Choice)", () => {
    const a = sampled("Hello.");
    const b = sampled("Sure.");
    const turn1 = { request: { model: MODEL, messages: [USER] }, response: { choices: [chatChoice("Hello.", a)] } };
    const turn2 = { request: { model: MODEL, messages: [USER, { role: "assistant", content: "Hello.", tool_calls: [] }, USER2] }, response: { choices: [chatChoice("Sure.", b)] } };
    const fromExchanges = rowsOf({ exchanges: { chat_completions: [turn1, turn2] } });
    const equivalent = rowsOf({ messages_and_choices: [USER, chatChoice("Hello.", a), USER2, chatChoice("Sure.", b)] });
    expect(fromExchanges).toHaveLength(1);
    expect(shape(fromExchanges)).toEqual(shape(equivalent));
    expect(fromExchanges[0]!.tokens).toEqual([...enginePrompt([USER, { role: "assistant", content: "Hello." }, USER2]), ...b]);
  });
});

describe("completions exchanges", () => {
  it("trains prompt ids then sampled ids (token_ids, or token_id:<n> logprob tokens) with token_logprobs", () => {
    const exact = { request: { model: MODEL, prompt: "Once upon" }, response: { prompt_token_ids: [5, 6], choices: [{ index: 0, text: " a time", token_ids: [7, 8], logprobs: { tokens: ["token_id:7", "token_id:8"], token_logprobs: [-0.5, -0.25] } }] } };
    expect(shape(rowsOf({ exchanges: { completions: [exact] } }))).toEqual([{ tokens: [5, 6, 7, 8], mask: [false, false, true, true], logprobs: [null, null, -0.5, -0.25] }]);
  });

  it("without ids: the prompt as the completions endpoint tokenizes it, the output from its logprob tokens", () => {
    const ids = tok.tokenize(" a time", false);
    const text = { request: { model: MODEL, prompt: "Once upon" }, response: { choices: [{ index: 0, text: " a time", logprobs: { tokens: ids.map((id) => tok.detokenize([id])), token_logprobs: ids.map(() => -1) } }] } };
    const [row] = rowsOf({ exchanges: { completions: [text] } });
    expect(row!.tokens).toEqual([...tok.promptTokens("Once upon", true), ...ids]);
    expect(row!.assistantMask.filter(Boolean)).toHaveLength(ids.length);
    // No logprobs at all: refused unless allow_training_without_logprobs (then trained without).
    const bare = { request: { model: MODEL, prompt: "Once upon" }, response: { choices: [{ index: 0, text: " a time" }] } };
    expect(() => rowsOf({ exchanges: { completions: [bare] } })).toThrow(/no logprobs to train with/);
    const [flagged] = rowsOf({ exchanges: { completions: [bare] } }, { ...OPTIONS, allowTrainingWithoutLogprobs: true });
    expect(flagged!.tokens).toEqual([...tok.promptTokens("Once upon", true), ...ids]);
    expect(flagged!.oldLogprobs.every((v) => v === null)).toBe(true);
  });
});

describe("responses exchanges", () => {
  it("trains as the chat equivalent: instructions, input items, function tools; output_text logprobs as the sampled tokens", () => {
    const answer = sampled("Hold it.");
    const request: JsonObject = {
      model: MODEL,
      instructions: "Be brief.",
      input: [
        { role: "user", content: [{ type: "input_text", text: "Pair?" }] },
        { type: "function_call", call_id: "c1", name: "search", arguments: '{"q":"pair"}' },
        { type: "function_call_output", call_id: "c1", output: "Hold the button." },
      ],
      tools: [{ type: "function", name: "search", description: "search", parameters: { type: "object" } }],
    };
    const response = { output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text: "Hold it.", logprobs: entries(answer) }] }] };
    const rows = rowsOf({ exchanges: { responses: [{ request, response }] } });
    const equivalent = rowsOf({
      messages_and_choices: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Pair?" },
        { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "search", arguments: '{"q":"pair"}' } }] },
        { role: "tool", tool_call_id: "c1", content: "Hold the button." },
        chatChoice("Hold it.", answer),
      ],
      tools: [{ type: "function", function: { name: "search", description: "search", parameters: { type: "object" } } }],
    });
    expect(rows).toHaveLength(1);
    expect(shape(rows)).toEqual(shape(equivalent));
    expect(rows[0]!.oldLogprobs.filter((v) => v !== null)).toEqual(answer.map((_, i) => -0.1 * (i + 1)));
  });

  it("does not train an output whose items are not all logprob-carrying messages (a function call has none)", () => {
    const response = { output: [{ type: "function_call", call_id: "c", name: "search", arguments: "{}" }] };
    expect(rowsOf({ exchanges: { responses: [{ request: { model: MODEL, input: "Go" }, response }] } })).toEqual([]);
  });
});

describe("messages (Anthropic) exchanges", () => {
  it("converts system, content blocks and input_schema tools as ART does, and trains on the response's token ids and logprobs", () => {
    const answer = sampled("Done.");
    const request = { model: MODEL, system: "Be brief.", messages: [{ role: "user", content: [{ type: "text", text: "Go" }] }], tools: [{ name: "run", description: "run it", input_schema: { type: "object" } }] };
    const response = { content: [{ type: "text", text: "Done." }], token_ids: answer, logprobs: answer.map(() => -0.3) };
    const rows = rowsOf({ exchanges: { messages: [{ request, response }] } });
    const equivalent = rowsOf({
      messages_and_choices: [{ role: "system", content: "Be brief." }, { role: "user", content: "Go" }, { finish_reason: "stop", index: 0, message: { role: "assistant", content: "Done." }, logprobs: { content: answer.map((id) => ({ token: `token_id:${id}`, logprob: -0.3 })) } }],
      tools: [{ type: "function", function: { name: "run", description: "run it", parameters: { type: "object" } } }],
    });
    expect(shape(rows)).toEqual(shape(equivalent));
    // With the prompt's ids too, no template is rendered at all.
    const exact = rowsOf({ exchanges: { messages: [{ request, response: { ...response, prompt_token_ids: [1, 2] } }] } });
    expect(exact[0]!.tokens).toEqual([1, 2, ...answer]);
    // Anthropic's own API sends no logprobs: nothing to train.
    expect(rowsOf({ exchanges: { messages: [{ request, response: { content: [{ type: "text", text: "Done." }] } }] } })).toEqual([]);
  });
});

describe("exchange refusals", () => {
  it("names what cannot be trained", () => {
    const bad = (trajectory: JsonObject, pattern: RegExp, options: RlTokenizeOptions = OPTIONS) => {
      expect(() => rowsOf(trajectory, options)).toThrow(TrainingInputError);
      expect(() => rowsOf(trajectory, options)).toThrow(pattern);
    };
    const chat = (model: string | null) => ({ request: { ...(model ? { model } : {}), messages: [USER] }, response: { choices: [chatChoice("a", [10])] } });
    bad({ exchanges: { realtime: [{}] } }, /exchanges\.realtime: unknown exchange kind/);
    bad({ exchanges: { chat_completions: [chat(null)] } }, /must name its model/);
    bad({ exchanges: { chat_completions: [chat("other/model")] } }, /no exchange is for the trained model proj\/agent/);
    bad({ exchanges: { chat_completions: [chat(MODEL)], completions: [{ request: { model: MODEL, prompt: "x" }, response: { choices: [{ text: "y" }] } }] } }, /mix protocols \(chat_completions, completions\)/);
    bad({ exchanges: { chat_completions: [chat("a/b"), chat("c/d")] } }, /several models/, { ...OPTIONS, trainedModel: null });
    bad({ exchanges: { chat_completions: [chat(MODEL)] }, messages_and_choices: [USER] }, /cannot be combined/);
    const noLogprobs = { request: { model: MODEL, messages: [USER] }, response: { prompt_token_ids: [1], choices: [{ index: 0, message: { role: "assistant", content: "a" }, logprobs: null, token_ids: [10] }] } };
    bad({ exchanges: { chat_completions: [noLogprobs] } }, /chat_completions\[0\]\.response\.choices\[0\]: the output has no logprobs/);
    expect(rowsOf({ exchanges: { chat_completions: [noLogprobs] } }, { ...OPTIONS, allowTrainingWithoutLogprobs: true })[0]!.assistantMask).toEqual([false, true]);
  });
});

describe("messages_and_choices Choices carrying the server's token ids (ART 0.5.23)", () => {
  const withIds = (content: string, prompt: number[], ids: number[], logprobs = true): JsonObject => ({
    finish_reason: "stop",
    index: 0,
    message: { role: "assistant", content },
    logprobs: logprobs ? { content: entries(ids), refusal: null } : null,
    prompt_token_ids: prompt,
    token_ids: ids,
  });

  it("assembles append-compatible sequences from the ids, no chat template rendered", () => {
    const rows = rowsOf({ messages_and_choices: [USER, withIds("a", [1, 2], [10, 11]), USER2, withIds("b", [1, 2, 10, 11, 3], [12])] });
    expect(shape(rows)).toEqual([{ tokens: [1, 2, 10, 11, 3, 12], mask: [false, false, true, true, false, true], logprobs: [null, null, -0.1, -0.2, null, -0.1] }]);
    // A prompt that does not extend the running sequence starts a new one (e.g. an additional history).
    const split = rowsOf({ messages_and_choices: [USER, withIds("a", [1, 2], [10])], additional_histories: [{ messages_and_choices: [USER2, withIds("b", [4], [13])] }] });
    expect(split.map((r) => r.tokens)).toEqual([
      [1, 2, 10],
      [4, 13],
    ]);
  });

  it("allow_training_without_logprobs trains Choices without logprobs (not plain assistant messages)", () => {
    const history = [USER, { role: "assistant", content: "plain" }, withIds("a", [1, 2], [10], false)];
    expect(rowsOf({ messages_and_choices: history })).toEqual([]);
    const flagged = rowsOf({ messages_and_choices: history }, { ...OPTIONS, allowTrainingWithoutLogprobs: true });
    expect(shape(flagged)).toEqual([{ tokens: [1, 2, 10], mask: [false, false, true], logprobs: [null, null, null] }]);
  });

  it("refuses a trajectory mixing Choices with and without ids, and logprobs that do not match the ids", () => {
    expect(() => rowsOf({ messages_and_choices: [USER, withIds("a", [1], [10]), USER2, chatChoice("b", [12])] })).toThrow(/messages_and_choices\[3\]: a trainable Choice without prompt_token_ids\/token_ids/);
    const short = { ...withIds("a", [1], [10, 11]), logprobs: { content: entries([10]) } };
    expect(() => rowsOf({ messages_and_choices: [USER, short] })).toThrow(/1 logprobs for 2 token_ids/);
  });
});
