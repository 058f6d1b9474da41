import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPrompt } from "../../../inference/engine/llama/prompt.js";
import type { GenerateRequest } from "../../../inference/engine/protocol.js";
import { TrainingInputError } from "../api.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import { tokenizeTrajectoryGroups, type RlRow } from "./rl-rows.js";
import { tinyTokenizer, type TinyTokenizer } from "./test-fixtures.js";

const IM_END = 767;
let tiny: TinyTokenizer;
let tok: ChatTokenizer;

beforeAll(async () => {
  tiny = await tinyTokenizer();
  tok = tiny.tokenizer;
});
afterAll(() => tiny?.close());

const OPTIONS = { allowTrainingWithoutLogprobs: false, scaleRewards: true };

/** The engine's prompt tokens for these messages (what the sampler saw). */
function enginePrompt(messages: JsonObject[], addGenerationPrompt = true): number[] {
  const request = { messages, tools: null, documents: null, chatTemplate: null, chatTemplateKwargs: {}, addGenerationPrompt, continueFinalMessage: false, echo: false, addSpecialTokens: false, truncatePromptTokens: null } as unknown as GenerateRequest;
  return buildPrompt(tok.model, request, 1 << 20).tokens.map(Number);
}

/** A Choice dict as ART sends it (model_dump), sampled tokens given as ids or as text. */
function choice(content: string, ids: number[], options: { asText?: boolean; toolCalls?: JsonObject[]; logprobs?: boolean } = {}): JsonObject {
  const entries = ids.map((id, i) => ({ token: options.asText ? tok.detokenize([id]) : `token_id:${id}`, logprob: -0.1 * (i + 1), bytes: [...Buffer.from(tok.detokenize([id]))], top_logprobs: [] }));
  return {
    finish_reason: options.toolCalls ? "tool_calls" : "stop",
    index: 0,
    logprobs: options.logprobs === false ? null : { content: entries, refusal: null },
    message: { content, refusal: null, role: "assistant", annotations: null, audio: null, function_call: null, tool_calls: options.toolCalls ?? null },
    stop_reason: null,
    token_ids: ids,
  };
}

const sampled = (text: string) => [...tok.tokenize(text, false), IM_END];
const SYSTEM = { role: "system", content: "You are a helpful assistant." };
const USER = { role: "user", content: "How do I pair my headphones?" };
const TOOL_CALL = { id: "call_1", type: "function", function: { name: "search_kb", arguments: '{"keywords":["pair"]}' } };
const TOOL = { role: "tool", tool_call_id: "call_1", name: "search_kb", content: '[{"title":"Pairing","text":"Hold the button."}]' };
const TOOLS = [{ type: "function", function: { name: "search_kb", description: "search", parameters: { type: "object" } } }];

function artTrajectory(reward: number): JsonObject {
  return {
    messages_and_choices: [SYSTEM, USER, choice("Let me search.", sampled("Let me search."), { asText: true, toolCalls: [TOOL_CALL] }), TOOL, choice("Hold the button for 3 s.", sampled("Hold the button for 3 s."))],
    tools: TOOLS,
    additional_histories: [{ messages_and_choices: [SYSTEM, { role: "user", content: "Summarise." }, choice("Pairing works.", sampled("Pairing works."))], tools: null }],
    reward,
    initial_policy_version: null,
    final_policy_version: null,
    metrics: { duration: 3.2 },
    metadata: { question_id: "q1" },
    logs: [],
  };
}

function maskedRuns(row: RlRow): number[][] {
  const runs: number[][] = [];
  row.assistantMask.forEach((on, i) => {
    if (!on) return;
    if (i > 0 && row.assistantMask[i - 1]) runs[runs.length - 1]!.push(row.tokens[i]!);
    else runs.push([row.tokens[i]!]);
  });
  return runs;
}

describe("tokenizeTrajectoryGroups", () => {
  it("splices an ART trajectory's sampled tokens into the engine's rendering", () => {
    const groups = [{ trajectories: [artTrajectory(1), { messages_and_choices: [USER, choice("No.", sampled("No."))], reward: 0 }], exceptions: [], metadata: {} }];
    const rows = tokenizeTrajectoryGroups(tok, groups, OPTIONS);
    expect(rows.map((r) => [r.groupIndex, r.trajectoryIndex, r.historyIndex, r.reward])).toEqual([
      [0, 0, 0, 1],
      [0, 0, 1, 1],
      [0, 1, 0, 0],
    ]);
    const row = rows[0]!;
    const first = sampled("Let me search.");
    const last = sampled("Hold the button for 3 s.");
    // The mask covers exactly the two Choices' sampled tokens.
    expect(maskedRuns(row)).toEqual([first, last]);
    // Before the first Choice: the engine's prompt for [system, user].
    const prompt1 = enginePrompt([SYSTEM, USER]);
    expect(row.tokens.slice(0, prompt1.length)).toEqual(prompt1);
    expect(row.assistantMask.slice(0, prompt1.length).some(Boolean)).toBe(false);
    // Before the final Choice: the engine's prompt for the conversation so far, as the client re-sent it.
    const prompt2 = enginePrompt([SYSTEM, USER, { role: "assistant", content: "Let me search.", tool_calls: [TOOL_CALL] }, TOOL]);
    expect(row.tokens.slice(0, prompt2.length)).toEqual(prompt2);
    expect(row.tokens.slice(prompt2.length)).toEqual(last);
    expect(row.tokens.length).toBe(prompt2.length + last.length);
    // Old logprobs line up with the sampled tokens (text tokens and token_id tokens alike), null elsewhere.
    const start1 = prompt1.length;
    expect(row.oldLogprobs.slice(start1, start1 + first.length)).toEqual(first.map((_, i) => -0.1 * (i + 1)));
    expect(row.oldLogprobs.slice(prompt2.length)).toEqual(last.map((_, i) => -0.1 * (i + 1)));
    row.oldLogprobs.forEach((lp, i) => expect(lp !== null).toBe(row.assistantMask[i]));
    // The additional history is its own row.
    const extra = rows[1]!;
    const prompt3 = enginePrompt([SYSTEM, { role: "user", content: "Summarise." }]);
    expect(extra.tokens).toEqual([...prompt3, ...sampled("Pairing works.")]);
    expect(maskedRuns(extra)).toEqual([sampled("Pairing works.")]);
  });

  it("skips zero-advantage trajectories and groups whose rewards are all equal", () => {
    const t = (reward: number) => ({ messages_and_choices: [USER, choice("Ok.", sampled("Ok."))], reward });
    const rows = tokenizeTrajectoryGroups(tok, [{ trajectories: [t(1), t(1)] }, { trajectories: [t(1), t(0), t(0.5)] }, { trajectories: [] }], OPTIONS);
    expect(rows.map((r) => [r.groupIndex, r.trajectoryIndex])).toEqual([
      [1, 0],
      [1, 1],
    ]);
    expect(tokenizeTrajectoryGroups(tok, [{ trajectories: [t(1), t(1)] }], { ...OPTIONS, includeZeroAdvantage: true })).toHaveLength(2);
  });

  it("renders Choices without logprobs and assistant dicts as context, and drops turns after the last trainable one", () => {
    const history = [USER, choice("Earlier.", sampled("Earlier."), { logprobs: false }), { role: "user", content: "More?" }, { role: "assistant", content: "Dict." }, { role: "user", content: "Go on." }, choice("Yes.", sampled("Yes.")), { role: "user", content: "ignored" }];
    const [row] = tokenizeTrajectoryGroups(tok, [{ trajectories: [{ messages_and_choices: history, reward: 1 }, { reward: 0 }] }], OPTIONS);
    const context = enginePrompt([USER, { role: "assistant", content: "Earlier." }, { role: "user", content: "More?" }, { role: "assistant", content: "Dict." }, { role: "user", content: "Go on." }]);
    expect(row!.tokens).toEqual([...context, ...sampled("Yes.")]);
    expect(maskedRuns(row!)).toEqual([sampled("Yes.")]);
  });

  it("keeps a sampled end token once and does not train the template's own", () => {
    const noEnd = tok.tokenize("Hi.", false); // the sampler stopped without emitting <|im_end|>
    const [row] = tokenizeTrajectoryGroups(tok, [{ trajectories: [{ messages_and_choices: [USER, choice("Hi.", noEnd), { role: "user", content: "Again" }, choice("Yo.", sampled("Yo."))], reward: 1 }, { reward: 0 }] }], OPTIONS);
    const prompt = enginePrompt([USER, { role: "assistant", content: "Hi." }, { role: "user", content: "Again" }]);
    expect(row!.tokens).toEqual([...prompt, ...sampled("Yo.")]);
    // The template's <|im_end|> after the first turn stays, untrained.
    expect(maskedRuns(row!)).toEqual([noEnd, sampled("Yo.")]);
  });

  it("maps sampled token text to ids (special tokens too; unknown text -> EOS)", () => {
    const word = tok.detokenize([300]); // a merged (multi-character) token
    const entries = [
      { token: word, logprob: -1, bytes: null, top_logprobs: [] },
      { token: "\u0001\u0002never-a-token", logprob: -2, bytes: null, top_logprobs: [] },
      { token: "<|im_end|>", logprob: -3, bytes: null, top_logprobs: [] },
    ];
    const c = { finish_reason: "stop", index: 0, message: { role: "assistant", content: word }, logprobs: { content: entries, refusal: null } };
    const [row] = tokenizeTrajectoryGroups(tok, [{ trajectories: [{ messages_and_choices: [USER, c], reward: 1 }, { reward: 0 }] }], OPTIONS);
    expect(word.length).toBeGreaterThan(1);
    expect(maskedRuns(row!)).toEqual([[300, tok.eosToken, IM_END]]);
    expect(row!.oldLogprobs.filter((v) => v !== null)).toEqual([-1, -2, -3]);
  });

  it("renders a non-final Choice's tool_calls but not the final one's", async () => {
    const template = [
      "{%- for message in messages -%}",
      "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') -}}",
      "{%- if message['tool_calls'] -%}{%- for call in message['tool_calls'] -%}{{- '<tool_call>' + call['function']['name'] + '</tool_call>' -}}{%- endfor -%}{%- endif -%}",
      "{{- '<|im_end|>\\n' -}}",
      "{%- endfor -%}",
      "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
    ].join("");
    const custom = await tiny.load({ chatTemplate: template });
    const first = [...custom.tokenize("Look.", false), IM_END];
    const history = [USER, choice("Look.", first, { toolCalls: [TOOL_CALL] }), TOOL, choice("Done.", [...custom.tokenize("Done.", false)], { toolCalls: [TOOL_CALL] })];
    const [row] = tokenizeTrajectoryGroups(custom, [{ trajectories: [{ messages_and_choices: history, reward: 1 }, { reward: 0 }] }], OPTIONS);
    const text = custom.detokenize(row!.tokens);
    expect(text).toBe(
      "<|im_start|>user\nHow do I pair my headphones?<|im_end|>\n<|im_start|>assistant\nLook.<|im_end|><tool_call>search_kb</tool_call><|im_end|>\n" +
        `<|im_start|>tool\n${TOOL.content}<|im_end|>\n<|im_start|>assistant\nDone.`,
    );
  });

  it("trains assistant dicts with allow_training_without_logprobs (no old logprobs)", () => {
    const history = [USER, { role: "assistant", content: "Plain answer." }];
    const flagged = { ...OPTIONS, allowTrainingWithoutLogprobs: true };
    const [row] = tokenizeTrajectoryGroups(tok, [{ trajectories: [{ messages_and_choices: history, reward: 1 }, { reward: 0 }] }], flagged);
    const prompt = enginePrompt([USER]);
    expect(row!.tokens).toEqual([...prompt, ...tok.tokenize("Plain answer.", false)]);
    expect(maskedRuns(row!)).toEqual([tok.tokenize("Plain answer.", false)]);
    expect(row!.oldLogprobs.every((v) => v === null)).toBe(true);
    expect(tokenizeTrajectoryGroups(tok, [{ trajectories: [{ messages_and_choices: history, reward: 1 }, { reward: 0 }] }], OPTIONS)).toEqual([]);
    const withCalls = [USER, { role: "assistant", content: "x", tool_calls: [TOOL_CALL] }];
    expect(() => tokenizeTrajectoryGroups(tok, [{ trajectories: [{ messages_and_choices: withCalls, reward: 1 }, { reward: 0 }] }], flagged)).toThrow(/tool calls ignored/);
  });

  it("trains newest ART's exchanges.chat_completions, one row per response choice (more in exchanges.test.ts)", () => {
    const exchange = { request: { model: "p/m", messages: [SYSTEM, USER], tools: TOOLS }, response: { choices: [choice("One.", sampled("One.")), { ...choice("Two.", sampled("Two.")), index: 1 }] } };
    const rows = tokenizeTrajectoryGroups(tok, [{ trajectories: [{ exchanges: { chat_completions: [exchange], completions: [] }, reward: 1 }, { reward: 0 }] }], OPTIONS);
    expect(rows.map((r) => r.historyIndex)).toEqual([0, 1]);
    expect(rows[1]!.tokens).toEqual([...enginePrompt([SYSTEM, USER]), ...sampled("Two.")]);
  });

  it("defaults enable_thinking off and preserve_thinking on when the template reads them", async () => {
    const custom = await tiny.load({ chatTemplate: "{{ enable_thinking }}/{{ preserve_thinking }}" });
    expect(custom.render([USER], null, false)).toBe("false/true");
    const overridden = await tiny.load({ chatTemplate: "{{ enable_thinking }}", chatTemplateKwargs: { enable_thinking: true } });
    expect(overridden.render([USER], null, false)).toBe("true");
  });

  it("accepts compact and null-filled dumps, and names bad input", () => {
    const compact: JsonObject = { trajectories: [{ messages_and_choices: [{ role: "user", content: null }, { message: { role: "assistant", content: "A" }, logprobs: { content: [{ token: "token_id:65", logprob: -1 }] } }], reward: 1 }, {}] };
    const [row] = tokenizeTrajectoryGroups(tok, [compact], OPTIONS);
    expect(maskedRuns(row!)).toEqual([[65]]);
    const nulls: JsonObject = { trajectories: [{ messages_and_choices: [USER, choice("B", sampled("B"))], tools: null, additional_histories: null, reward: 2, metrics: null }, { reward: null }], exceptions: null, metadata: null };
    expect(tokenizeTrajectoryGroups(tok, [nulls], OPTIONS)).toHaveLength(1);

    const bad = (groups: JsonObject[], pattern: RegExp) => {
      expect(() => tokenizeTrajectoryGroups(tok, groups, OPTIONS)).toThrow(TrainingInputError);
      expect(() => tokenizeTrajectoryGroups(tok, groups, OPTIONS)).toThrow(pattern);
    };
    bad([{ trajectories: {} }], /trajectory_groups\[0\]\.trajectories: expected a list/);
    bad([{ trajectories: [{ reward: "high" }] }], /trajectories\[0\]\.reward/);
    bad([{ trajectories: [{ messages_and_choices: [{ content: "no role" }], reward: 1 }, {}] }], /messages_and_choices\[0\]: a message needs a string "role"/);
    const outOfVocab = { message: { role: "assistant", content: "x" }, logprobs: { content: [{ token: "token_id:1048576", logprob: -1 }] } };
    bad([{ trajectories: [{ messages_and_choices: [USER, outOfVocab], reward: 1 }, {}] }], /outside the base model's vocabulary/);
  });
});
