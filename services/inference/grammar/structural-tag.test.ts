// Structural tags -> GBNF: every grammar must parse in llama.cpp, and llama.cpp's own matcher must
// accept and reject the outputs we expect (free text, triggers, tags, continued messages).
import type { LlamaGrammar, Llama } from "node-llama-cpp";
import type { JsonValue } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UnsupportedSchemaError } from "./json-schema.js";
import { StructuralTagError, structuralTagToGbnf, type StructuralTagOptions } from "./structural-tag.js";
import { grammarAccepts, loadTinyModel, sampleWithGrammar } from "./test-support.js";
import { loadLlama } from "../engine/llama/binary.js";

let llama: Llama;
beforeAll(async () => {
  llama = await loadLlama();
});
afterAll(async () => {
  await llama?.dispose();
});

async function compile(tag: JsonValue, options: StructuralTagOptions = {}): Promise<LlamaGrammar> {
  return llama.createGrammar({ grammar: structuralTagToGbnf(tag, options) });
}

async function expectLanguage(tag: JsonValue, accept: string[], reject: string[], options: StructuralTagOptions = {}): Promise<void> {
  const grammar = await compile(tag, options);
  for (const text of accept) expect(grammarAccepts(grammar, text), `should accept ${JSON.stringify(text)}`).toBe(true);
  for (const text of reject) expect(grammarAccepts(grammar, text), `should reject ${JSON.stringify(text)}`).toBe(false);
}

const CITY = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const ZONE = { type: "object", properties: { zone: { type: "integer" } }, required: ["zone"] };
const WEATHER = { begin: "<function=get_weather>", schema: CITY, end: "</function>" };
const LEGACY = { type: "structural_tag", structures: [WEATHER], triggers: ["<function="] };

/** xgrammar's format form of a tag with JSON content. */
function tag(begin: string, schema: JsonValue, end: string | string[]): JsonValue {
  return { type: "tag", begin, content: { type: "json_schema", json_schema: schema }, end };
}

describe("legacy form (structures + triggers)", () => {
  it("accepts free text with tags, plain text and text ending in a partial trigger", async () => {
    await expectLanguage(
      LEGACY,
      [
        'hello <function=get_weather>{"city": "Paris"}</function> bye',
        "",
        "no tool call at all, even with < and = and function",
        "ends in a partial trigger <fun",
        "<function",
        '<function=get_weather>{"city":"a"}</function><function=get_weather>{"city":"b"}</function>',
        'a <<function=get_weather>{\n  "city": "Oslo"\n}</function>',
      ],
      [
        '<function=get_weather>{}</function>',
        '<function=get_weather>{"city": 3}</function>',
        '<function=get_weather>{"city": "Paris", "country": "FR"}</function>',
        '<function=get_time>{"city": "Paris"}</function>',
        "a full trigger <function= and nothing after",
        "<function=",
        '<function=get_weather>{"city": "Paris"}',
        '<function=get_weather>{"city": "Paris"}</functio',
      ],
    );
  });

  it("takes the response_format shape, a JSON string, and no type", async () => {
    for (const form of [JSON.stringify(LEGACY), { structures: [WEATHER], triggers: ["<function="] }]) {
      await expectLanguage(form, ['x<function=get_weather>{"city":"P"}</function>'], ["<function=x"]);
    }
  });

  it("offers every structure that shares a trigger", async () => {
    await expectLanguage(
      { structures: [WEATHER, { begin: "<function=get_time>", schema: ZONE, end: "</function>" }], triggers: ["<function="] },
      ['<function=get_weather>{"city":"P"}</function> and <function=get_time>{"zone":2}</function>'],
      ['<function=get_time>{"city":"P"}</function>', '<function=get_weather>{"zone":2}</function>', "<function=get_date>{}</function>"],
    );
  });

  it("handles overlapping triggers", async () => {
    const overlapping = {
      structures: [
        { begin: "<a>", schema: { type: "integer" }, end: "</a>" },
        { begin: "a<b>", schema: { type: "string" }, end: "</b>" },
      ],
      triggers: ["<a", "a<b"],
    };
    await expectLanguage(
      overlapping,
      ["<a>1</a>", 'a<b>"x"</b>', 'aa<b>"x"</b>', "a<a>1</a>", "a<", "a<c <b> ab", "<", "x<a>2</a>y", 'a<b>"s"</b>a<a>3</a>'],
      ["<a", "a<b", "a<ax", "a<a", '<a>"x"</a>', "a<b>1</b>", "<a>1</a>a<b"],
    );
  });

  it("offers the tags of every trigger that ends at the same place", async () => {
    // "<a" is a suffix of "b<a": after "b<a" either tag may follow
    await expectLanguage(
      { structures: [{ begin: "<a>", schema: { type: "integer" }, end: "</a>" }, { begin: "b<a:", schema: { type: "boolean" }, end: ";" }], triggers: ["<a", "b<a"] },
      ["b<a>1</a>", "b<a:true;", "bb<a:false;", "<a>2</a>"],
      ["b<a", "<a:true;", "b<a>true</a>"],
    );
  });

  it("escapes special characters in triggers, begins and ends, and handles non-ASCII", async () => {
    const special = {
      structures: [
        { begin: '<"q\\[x]-^\n|', schema: { type: "integer" }, end: '\n]^-"\\>' },
        { begin: "→€😀 call", schema: { type: "boolean" }, end: "😀" },
      ],
      triggers: ['<"q\\', "→€😀"],
    };
    await expectLanguage(
      special,
      [
        '<"q\\[x]-^\n|42\n]^-"\\>',
        "→€😀 calltrue😀",
        'free "quoted" \\ [x] - ^ \n text → € 😀 <"q',
        '<"q\\[x]-^\n|1\n]^-"\\> then →€😀 callfalse😀 end →€',
        "\u0001\t\r",
      ],
      ['<"q\\', '<"q\\[x]-^\n|x\n]^-"\\>', "→€😀", "→€😀 call1😀", '<"q\\[x]-^\n|42\n]^-"\\'],
    );
  });

  it("refuses malformed structures with their path", () => {
    const bad: [JsonValue, RegExp][] = [
      [{ structures: [WEATHER, { begin: "<tool>", schema: CITY, end: "</tool>" }], triggers: ["<function="] }, /structures\[1\]\.begin must start with one of the triggers/],
      [{ structures: [], triggers: ["<function="] }, /structures must be a non-empty array/],
      [{ structures: [WEATHER], triggers: [] }, /triggers must be a non-empty array/],
      [{ structures: [WEATHER], triggers: [""] }, /triggers\[0\] must be a non-empty string/],
      [{ structures: [WEATHER] }, /triggers must be a non-empty array/],
      [{ structures: [{ ...WEATHER, begin: 5 }], triggers: ["<"] }, /structures\[0\]\.begin must be a string/],
      [{ structures: [{ ...WEATHER, end: null }], triggers: ["<"] }, /structures\[0\]\.end must be a string/],
      [{ structures: [{ begin: "<f>", end: "</f>" }], triggers: ["<"] }, /structures\[0\]\.schema must be a JSON schema/],
      [{ structures: [WEATHER], triggers: ["<function=", "<function=get"] }, /structures\[0\]\.begin starts with more than one trigger/],
      [{ type: "json_schema", structures: [WEATHER], triggers: ["<"] }, /type must be "structural_tag"/],
      [{ structures: [WEATHER], triggers: ["<"], format: { type: "any_text" } }, /not both/],
      [{ type: "structural_tag" }, /needs "format"/],
      [[WEATHER], /must be a JSON object/],
      ["{not json", /not valid JSON/],
    ];
    for (const [tagValue, message] of bad) {
      expect(() => structuralTagToGbnf(tagValue)).toThrow(StructuralTagError);
      expect(() => structuralTagToGbnf(tagValue)).toThrow(message);
    }
  });

  it("passes schema errors on with the structure's path", () => {
    const tagValue = { structures: [{ begin: "<f>", schema: { not: { type: "string" } }, end: "</f>" }], triggers: ["<f"] };
    expect(() => structuralTagToGbnf(tagValue)).toThrow(UnsupportedSchemaError);
    expect(() => structuralTagToGbnf(tagValue)).toThrow(/^structures\[0\]\.schema: unsupported JSON schema keyword "not" at #/);
  });

  it("follows the whitespace and additionalProperties options", async () => {
    const open = { structures: [{ begin: "<f>", schema: { type: "object", properties: { a: { type: "integer" } } }, end: "</f>" }], triggers: ["<f"] };
    await expectLanguage(open, ['<f>{"a": 1}</f>'], ['<f>{"a":1,"b":2}</f>']);
    await expectLanguage(open, ['<f>{"a":1,"b":2}</f>'], ['<f>{"a": 1}</f>'], { disableAdditionalProperties: false, disableAnyWhitespace: true });
  });
});

describe("continued messages (prefix)", () => {
  const twoTools = { structures: [WEATHER, { begin: "<function=get_time>", schema: ZONE, end: "</function>" }], triggers: ["<function="] };

  it("continues free text as if nothing had been written", async () => {
    await expectLanguage(twoTools, ["", "more", '<function=get_time>{"zone":1}</function>'], ["<function=x"], { prefix: "Sure, " });
  });

  it("continues inside a partial trigger", async () => {
    await expectLanguage(
      twoTools,
      // "<funcction=..." is free text: it never completes the trigger
      ['tion=get_weather>{"city":"P"}</function>', "", "x", 'x<function=get_time>{"zone":1}</function>', 'tion=get_weather>{"city":"P"}</function> ok', 'ction=get_weather>{"city":"P"}</function>'],
      ["tion=", 'tion=get_date>{"zone":1}</function>', 'tion=get_weather>{"city":1}</function>'],
      { prefix: "call <func" },
    );
  });

  it("continues with the rest of a begin string right after a trigger", async () => {
    await expectLanguage(
      twoTools,
      ['get_weather>{"city":"P"}</function>', 'get_time>{"zone":1}</function> bye'],
      ["", "hello", 'get_date>{"zone":1}</function>', "get_weather>", 'get_weather>{"zone":1}</function>'],
      { prefix: "hi <function=" },
    );
  });

  it("continues part-way through a begin string, and at its end", async () => {
    await expectLanguage(twoTools, ['eather>{"city":"P"}</function>'], ['ime>{"zone":1}</function>', ""], { prefix: "<function=get_w" });
    await expectLanguage(twoTools, ['{"city":"P"}</function>'], ["", '{"zone":1}</function>'], { prefix: "<function=get_weather>" });
  });

  it("refuses a continued message that is inside a tag's content or fits no tag", () => {
    expect(() => structuralTagToGbnf(twoTools, { prefix: '<function=get_weather>{"ci' })).toThrow(/ends inside a structural tag's content/);
    expect(() => structuralTagToGbnf(twoTools, { prefix: '<function=get_weather>{"city":"P"}</function> and ' })).toThrow(StructuralTagError);
    expect(() => structuralTagToGbnf(twoTools, { prefix: "<function=get_date" })).toThrow(/does not fit the structural tag/);
    expect(() => structuralTagToGbnf({ type: "structural_tag", format: { type: "const_string", value: "x" } }, { prefix: "x" })).toThrow(/only supported when the top-level format is triggered_tags/);
  });
});

describe("xgrammar format form", () => {
  const tools = (extra: Record<string, JsonValue>): JsonValue => ({
    type: "structural_tag",
    format: { type: "triggered_tags", triggers: ["<function="], tags: [tag("<function=get_weather>", CITY, "</function>"), tag("<function=get_time>", ZONE, "</function>")], ...extra },
  });
  const weather = '<function=get_weather>{"city":"P"}</function>';
  const time = '<function=get_time>{"zone":1}</function>';

  it("triggered_tags alone is the legacy language", async () => {
    await expectLanguage(tools({}), ["", "text", `a ${weather} b ${time}`, "<function"], ["<function=", `${weather.slice(0, -1)}`]);
  });

  it("at_least_one starts with a tag (xgrammar allows no leading free text)", async () => {
    await expectLanguage(tools({ at_least_one: true }), [weather, `${time} then text ${weather} <fun`], ["", "text", `text ${weather}`, "<function=get_w"]);
  });

  it("stop_after_first ends the output after the first tag", async () => {
    await expectLanguage(tools({ stop_after_first: true }), ["", "just text", `text ${weather}`, weather], [`${weather} `, `${weather}${time}`, `x ${weather} y`]);
  });

  it("at_least_one with stop_after_first is exactly one tag", async () => {
    await expectLanguage(tools({ at_least_one: true, stop_after_first: true }), [weather, time], ["", `x${weather}`, `${weather}x`, `${weather}${time}`]);
  });

  it("continues a message under at_least_one inside the first begin string only", async () => {
    await expectLanguage(tools({ at_least_one: true }), ['ather>{"city":"P"}</function> more'], ['ime>{"zone":1}</function>'], { prefix: "<function=get_we" });
    expect(() => structuralTagToGbnf(tools({ at_least_one: true }), { prefix: "hello" })).toThrow(/does not fit/);
  });

  it("excludes strings from triggered_tags' free text", async () => {
    await expectLanguage(tools({ excludes: ["STOP"] }), ["STO", "ST OP", `STO${weather}`], ["STOP", "xSTOPx"]);
  });

  it("compiles const_string, sequence and or", async () => {
    const format: JsonValue = {
      type: "sequence",
      elements: [
        { type: "const_string", value: 'Answer: "' },
        { type: "or", elements: [{ type: "const_string", value: "yes" }, { type: "const_string", value: "no" }, { type: "json_schema", json_schema: { type: "integer" } }] },
        { type: "const_string", value: '"\n' },
      ],
    };
    await expectLanguage({ type: "structural_tag", format }, ['Answer: "yes"\n', 'Answer: "no"\n', 'Answer: "12"\n'], ['Answer: "maybe"\n', 'Answer: "yes"', 'answer: "no"\n']);
  });

  it("stops any_text inside a tag at the tag's end strings", async () => {
    const think = { type: "tag", begin: "<think>", content: { type: "any_text" }, end: "</think>" };
    await expectLanguage({ format: think }, ["<think></think>", "<think>a < b </thin </think>", "<think>\n😀</think>"], ["<think>x</think>y</think>", "<think>x", "<think>x</think>y"]);
    const ends = { ...think, end: ["</think>", "<done>"] };
    await expectLanguage({ format: ends }, ["<think>x</think>", "<think>x<done>"], ["<think>x<done></think>", "<think>x</think><done>"]);
    const excluding = { format: { type: "any_text", excludes: ["<|end|>"] } };
    await expectLanguage(excluding, ["", "anything <|end| else"], ["a <|end|> b"]);
    await expectLanguage({ format: { type: "any_text" } }, ["", "anything </think> at all"], []);
  });

  it("combines reasoning, free text with tool calls, and nested triggered_tags", async () => {
    const format: JsonValue = {
      type: "sequence",
      elements: [
        { type: "tag", begin: "<think>", content: { type: "any_text" }, end: "</think>" },
        { type: "triggered_tags", triggers: ["<tool>"], tags: [{ begin: "<tool>", content: { type: "json_schema", json_schema: ZONE }, end: "</tool>" }] },
      ],
    };
    await expectLanguage({ format }, ['<think>hmm</think>ok <tool>{"zone":3}</tool> done', "<think></think>"], ["no think", '<think>x</think><tool>{"zone":"3"}</tool>']);
    // triggered_tags inside a tag: its free text stops before the tag's end
    const nested = { type: "tag", begin: "<r>", content: { type: "triggered_tags", triggers: ["<t>"], tags: [{ type: "tag", begin: "<t>", content: { type: "const_string", value: "!" }, end: "</t>" }] }, end: "</r>" };
    await expectLanguage({ format: nested }, ["<r>a<t>!</t>b</r>", "<r></r>"], ["<r>a</r>b</r>", "<r><t>?</t></r>", "<r>a"]);
  });

  it("refuses unsupported types and fields with their path", () => {
    const bad: [JsonValue, RegExp][] = [
      [{ format: { type: "sequence", elements: [{ type: "const_string", value: "a" }, { type: "regex", pattern: "x" }] } }, /unsupported structural tag format type "regex" at format\.elements\[1\]/],
      [{ format: { type: "token", token: 5 } }, /unsupported structural tag format type "token" at format/],
      [{ format: { value: "a" } }, /format\.type must be a string/],
      [{ format: { type: "tag", begin: "<t>", content: { type: "any_text" }, end: "" } }, /format\.end must not be empty/],
      [{ format: { type: "tag", begin: { type: "token", token: "<|x|>" }, content: { type: "any_text" }, end: "x" } }, /format\.begin must be a string/],
      [{ format: { type: "tag", begin: "<t>", content: { type: "any_text" }, end: [] } }, /format\.end must be a string or a non-empty array/],
      [{ format: { type: "any_text", max_chars: 10 } }, /format\.max_chars = 10 is not supported/],
      [{ format: { type: "json_schema", json_schema: {}, style: "qwen_xml" } }, /format\.style = "qwen_xml" is not supported/],
      [{ format: { type: "json_schema", json_schema: "x" } }, /format\.json_schema must be a JSON schema/],
      [{ format: { type: "or", elements: [] } }, /format\.elements must be a non-empty array/],
      [{ format: { type: "const_string", value: 1 } }, /format\.value must be a string/],
      [{ format: { type: "triggered_tags", triggers: ["<a"], tags: [{ type: "tag", begin: "<b>", content: { type: "const_string", value: "" }, end: "" }] } }, /format\.tags\[0\]\.begin must start with one of the triggers/],
      [{ format: { type: "triggered_tags", triggers: ["<a"], tags: [] } }, /format\.tags must be a non-empty array/],
      [{ format: { type: "triggered_tags", triggers: ["<a"], tags: [{ type: "or", elements: [] }] } }, /format\.tags\[0\]\.type must be "tag"/],
      [{ format: { type: "triggered_tags", triggers: ["<a"], tags: [tag("<a>", true, "</a>")], at_least_one: "yes" } }, /format\.at_least_one must be a boolean/],
    ];
    for (const [tagValue, message] of bad) {
      expect(() => structuralTagToGbnf(tagValue)).toThrow(StructuralTagError);
      expect(() => structuralTagToGbnf(tagValue)).toThrow(message);
    }
    expect(() => structuralTagToGbnf({ format: { type: "json_schema", json_schema: { type: "strin" } } })).toThrow(/^format\.json_schema: unsupported JSON schema keyword "type"/);
  });
});

describe("sampling", () => {
  it("a tiny model under at_least_one + stop_after_first writes exactly one valid tag", async () => {
    const tiny = await loadTinyModel();
    try {
      const tagValue = { format: { type: "triggered_tags", triggers: ["<f="], tags: [tag("<f=a>", { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }, "</f>"), tag("<f=b>", { enum: ["x", "y"] }, "</f>")], at_least_one: true, stop_after_first: true } };
      const grammar = await tiny.llama.createGrammar({ grammar: structuralTagToGbnf(tagValue, { disableAnyWhitespace: true }) });
      for (let seed = 1; seed <= 5; seed++) {
        const sample = await sampleWithGrammar(tiny, grammar, seed, 120);
        expect(sample.finished, JSON.stringify(sample.text)).toBe(true);
        const match = /^<f=(a|b)>(.*)<\/f>$/s.exec(sample.text);
        expect(match, sample.text).not.toBeNull();
        const value = JSON.parse(match?.[2] ?? "") as JsonValue;
        if (match?.[1] === "a") expect(Number.isInteger((value as { n: unknown }).n)).toBe(true);
        else expect(["x", "y"]).toContain(value);
      }
    } finally {
      await tiny.dispose();
    }
  });
});
