// The Hugging Face tokenizer files written from a GGUF (services/weights/tokenizer/hf-files.ts),
// loaded by transformers in the trainer's Python environment, against the engine's own tokenizer
// (llama.cpp through node-llama-cpp, vocabulary only: ChatTokenizer, which training and the
// completions endpoint share): encode with and without special tokens, decode with and without
// them, and apply_chat_template against the engine's rendering of the same conversation. For the
// built-in tiny models and SmolLM2-135M-Instruct, and for SmolLM2's vocabulary under the other
// pre-tokenizer families written (default, gpt-2, llama-bpe, qwen2, qwen35), as metadata-only files.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { JsonObject } from "@bufbuild/protobuf";
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatTokenizer } from "../../services/training/trainer/tokenize/chat-tokenizer.js";
import { DEFAULT_TRAINER_PYTHON } from "../../services/training/index.js";
import { gv } from "../../services/weights/gguf/values.js";
import { writeGguf } from "../../services/weights/gguf/writer.js";
import { ensureBuiltInModel, hfTokenizerFilesOfGguf, readGgufHeader } from "../../services/weights/index.js";

const PYTHON = process.env.TRAINER_PYTHON ?? DEFAULT_TRAINER_PYTHON;
const SMOLLM2 = resolve(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");

const TEXTS = [
  "hello",
  "Hello, world! It's 2024.",
  "  x = 1;\n\n    y",
  "naïve café — 東京 🙂 Ünïcödé",
  "tabs\tand\r\nCRLF   \n",
  "1234567890 3.14159 -42 ٣٤ ½",
  "<|im_start|>user\nhi<|im_end|>\n",
  "a<|im_end|>b <|endoftext|> <|im_start|>",
  "I'm you're we've they'll she'd DON'T",
  "   leading and trailing   ",
  "\u00a0nbsp\u3000ideographic\u2003em",
  "emoji 👩‍👩‍👧 and ZWJ",
  "code: def f(x):\n    return x**2  # comment\n\t\tdone",
  "",
  " ",
  "\n\n\n",
  "x  ,  y . z ? w ! ' q ' 's",
  "Ελληνικά Русский العربية हिन्दी ภาษาไทย",
  "word" + " ".repeat(40) + "gap" + "\n".repeat(5) + "end",
];

interface Chat {
  messages: JsonObject[];
  tools?: JsonObject[];
  addGenerationPrompt: boolean;
}

const CHATS: Chat[] = [
  { messages: [{ role: "user", content: "Hi there! 2+2?" }], addGenerationPrompt: true },
  {
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "naïve café 東京\n  indented" },
      { role: "assistant", content: "ok <|im_end|> inside" },
      { role: "user", content: "again" },
    ],
    addGenerationPrompt: false,
  },
];
const TOOLS: JsonObject[] = [{ type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const TOOL_CHAT: Chat = {
  messages: [
    { role: "user", content: "Weather in Paris?" },
    { role: "assistant", content: "", tool_calls: [{ type: "function", function: { name: "get_weather", arguments: '{"city": "Paris"}' } }] },
    { role: "tool", content: '{"temp": 21}' },
  ],
  tools: TOOLS,
  addGenerationPrompt: true,
};

// argv: the cases file; prints what transformers gives for each model directory.
const SCRIPT = `
import json, sys
from transformers import AutoTokenizer
out = []
for case in json.load(open(sys.argv[1])):
    t = AutoTokenizer.from_pretrained(case["dir"])
    r = {"class": type(t).__name__, "add": [], "plain": [], "decoded": [], "decoded_skip": [], "chats": []}
    for text, ids in zip(case["texts"], case["engine_ids"]):
        r["add"].append(t.encode(text, add_special_tokens=True))
        r["plain"].append(t.encode(text, add_special_tokens=False))
        r["decoded"].append(t.decode(ids, skip_special_tokens=False))
        r["decoded_skip"].append(t.decode(ids, skip_special_tokens=True))
    for chat in case["chats"]:
        kwargs = {"tools": chat["tools"]} if chat.get("tools") else {}
        text = t.apply_chat_template(chat["messages"], tokenize=False, add_generation_prompt=chat["add_generation_prompt"], **kwargs)
        ids = t.apply_chat_template(chat["messages"], tokenize=True, return_dict=False, add_generation_prompt=chat["add_generation_prompt"], **kwargs)
        r["chats"].append({"text": text, "ids": list(ids)})
    out.append(r)
print(json.dumps(out))
`;

interface Engine {
  name: string;
  dir: string;
  texts: string[];
  add: number[][];
  plain: number[][];
  decoded: string[];
  decodedSkip: string[];
  chats: (Chat & { text: string; ids: number[] })[];
  bos: number | null;
}
interface Theirs {
  class: string;
  add: number[][];
  plain: number[][];
  decoded: string[];
  decoded_skip: string[];
  chats: { text: string; ids: number[] }[];
}

let scratch: string;
let llama: Llama;
const engines: Engine[] = [];
let theirs: Theirs[] = [];

/** The engine's answers for one GGUF, and its HF files written to a directory of their own. */
async function engineSide(name: string, path: string, chats: Chat[]): Promise<Engine> {
  const dir = join(scratch, name);
  await mkdir(dir, { recursive: true });
  for (const [file, text] of Object.entries(await hfTokenizerFilesOfGguf(path))) await writeFile(join(dir, file), text);
  const tokenizer = await ChatTokenizer.load(path, { llama });
  try {
    const plain = TEXTS.map((t) => tokenizer.promptTokens(t, false));
    return {
      name,
      dir,
      texts: TEXTS,
      add: TEXTS.map((t) => tokenizer.promptTokens(t, true)),
      plain,
      decoded: plain.map((ids) => tokenizer.detokenize(ids, true)),
      decodedSkip: plain.map((ids) => tokenizer.detokenize(ids, false)),
      chats: chats.map((chat) => {
        const text = tokenizer.render(chat.messages, chat.tools ?? null, chat.addGenerationPrompt);
        return { ...chat, text, ids: tokenizer.tokenize(text, true) };
      }),
      bos: tokenizer.model.tokens.shouldPrependBosToken ? tokenizer.model.tokens.bos : null,
    };
  } finally {
    await tokenizer.dispose();
  }
}

/** SmolLM2's tokenizer metadata with another pre-tokenizer type (no tensors: the engine loads the vocabulary only). */
async function smolVariant(pre: string, dropAddBos: boolean): Promise<string> {
  const metadata = new Map((await readGgufHeader(SMOLLM2)).metadata);
  metadata.set("tokenizer.ggml.pre", gv.str(pre));
  if (dropAddBos) metadata.delete("tokenizer.ggml.add_bos_token");
  const path = join(scratch, `smol-${pre}.gguf`);
  await writeGguf(path, metadata, []);
  return path;
}

beforeAll(async () => {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: the install step (scripts/install-trainer.sh) creates the trainer's Python environment; run it, or set TRAINER_PYTHON`);
  scratch = await mkdtemp(join(tmpdir(), "hf-tokenizer-files-"));
  // Silent: llama.cpp complains that the metadata-only variants have no tensors (vocabulary only is loaded).
  llama = await getLlama({ gpu: false, build: "never", progressLogs: false, logLevel: LlamaLogLevel.disabled });
  engines.push(await engineSide("tiny-chat", await ensureBuiltInModel("tiny-chat", scratch), CHATS));
  engines.push(await engineSide("tiny-tools", await ensureBuiltInModel("tiny-tools", scratch), [...CHATS, TOOL_CHAT]));
  if (existsSync(SMOLLM2)) {
    engines.push(await engineSide("SmolLM2-135M-Instruct", SMOLLM2, CHATS));
    // llama-bpe without add_bos_token: BOS from the type's default, and ignore_merges.
    for (const [pre, dropAddBos] of [["default", false], ["gpt-2", false], ["llama-bpe", true], ["qwen2", false], ["qwen35", false]] as const) {
      engines.push(await engineSide(`smol-${pre}`, await smolVariant(pre, dropAddBos), []));
    }
  }
  const cases = engines.map((e) => ({
    dir: e.dir,
    texts: e.texts,
    engine_ids: e.plain,
    chats: e.chats.map((c) => ({ messages: c.messages, tools: c.tools ?? null, add_generation_prompt: c.addGenerationPrompt })),
  }));
  await writeFile(join(scratch, "cases.json"), JSON.stringify(cases));
  try {
    const { stdout } = await promisify(execFile)(PYTHON, ["-c", SCRIPT, join(scratch, "cases.json")], {
      timeout: 240_000,
      maxBuffer: 64 * 2 ** 20,
      // Local directories only: nothing is fetched.
      env: { ...process.env, HF_HUB_OFFLINE: "1", TRANSFORMERS_VERBOSITY: "error" },
    });
    theirs = JSON.parse(stdout) as Theirs[];
  } catch (err) {
    throw new Error(`transformers failed (${PYTHON}): ${err instanceof Error ? err.message : String(err)}\n${(err as { stderr?: string }).stderr ?? ""}`, { cause: err });
  }
}, 300_000);

afterAll(async () => {
  await llama?.dispose();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("Hugging Face tokenizer files against the engine's tokenizer", () => {
  it("covers the built-in models and SmolLM2 with its pre-tokenizer variants", () => {
    expect(engines.map((e) => e.name).slice(0, 2)).toEqual(["tiny-chat", "tiny-tools"]);
    if (existsSync(SMOLLM2)) expect(engines).toHaveLength(8);
    expect(theirs).toHaveLength(engines.length);
    // transformers 5 loads PreTrainedTokenizerFast as its tokenizers backend.
    for (const r of theirs) expect(["TokenizersBackend", "PreTrainedTokenizerFast"]).toContain(r.class);
  });

  it("encodes every text to the engine's tokens, with and without special tokens", () => {
    engines.forEach((engine, m) => {
      const hf = theirs[m]!;
      engine.texts.forEach((text, i) => {
        const label = `${engine.name}: ${JSON.stringify(text)}`;
        expect(hf.plain[i], label).toEqual(engine.plain[i]);
        // The one difference: the engine does not add BOS to a text that already starts with it
        // (as its completions endpoint and vLLM do); transformers always adds it.
        const doubled = engine.bos !== null && engine.plain[i]![0] === engine.bos;
        expect(hf.add[i], label).toEqual(doubled ? [engine.bos, ...engine.add[i]!] : engine.add[i]);
      });
      if (engine.name === "smol-llama-bpe") expect(engine.add[0]![0]).toBe(engine.bos); // BOS was added there
    });
  });

  it("decodes the engine's tokens to the engine's text, with and without special tokens", () => {
    engines.forEach((engine, m) => {
      const hf = theirs[m]!;
      engine.texts.forEach((text, i) => {
        expect(hf.decoded[i], `${engine.name}: ${JSON.stringify(text)}`).toBe(engine.decoded[i]);
        expect(hf.decoded_skip[i], `${engine.name} skipping special tokens: ${JSON.stringify(text)}`).toBe(engine.decodedSkip[i]);
      });
    });
    // gpt-2 and default clean spaces when decoding (llama.cpp's clean_spaces), the others do not.
    const decodedOf = (name: string) => engines.find((e) => e.name === name)?.decoded[TEXTS.indexOf("x  ,  y . z ? w ! ' q ' 's")];
    if (existsSync(SMOLLM2)) {
      expect(decodedOf("smol-gpt-2")).toBe("x ,  y. z? w!'q''s");
      expect(decodedOf("SmolLM2-135M-Instruct")).toBe("x  ,  y . z ? w ! ' q ' 's");
    }
  });

  it("renders and tokenizes chats with apply_chat_template as the engine does", () => {
    engines.forEach((engine, m) => {
      engine.chats.forEach((chat, c) => {
        const hf = theirs[m]!.chats[c]!;
        expect(hf.text, `${engine.name} chat ${c}`).toBe(chat.text);
        expect(hf.ids, `${engine.name} chat ${c}`).toEqual(chat.ids);
      });
    });
    expect(engines.find((e) => e.name === "tiny-tools")?.chats[2]?.text).toContain("<tools>\n{");
  });
});
