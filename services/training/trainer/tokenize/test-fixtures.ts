// Test support: the built-in tiny ChatML model's tokenizer, written once into a temp dir per file.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBuiltInModel } from "../../../weights/index.js";
import { ChatTokenizer, type ChatTokenizerOptions } from "./chat-tokenizer.js";

export interface TinyTokenizer {
  tokenizer: ChatTokenizer;
  modelPath: string;
  /** Loads another tokenizer over the same file (e.g. with a template override). */
  load(options: ChatTokenizerOptions): Promise<ChatTokenizer>;
  close(): Promise<void>;
}

export async function tinyTokenizer(): Promise<TinyTokenizer> {
  const dir = await mkdtemp(join(tmpdir(), "srl-tokenize-"));
  const modelPath = await ensureBuiltInModel("tiny-chat", dir);
  const opened: ChatTokenizer[] = [];
  const load = async (options: ChatTokenizerOptions) => {
    const t = await ChatTokenizer.load(modelPath, options);
    opened.push(t);
    return t;
  };
  const tokenizer = await load({});
  return {
    tokenizer,
    modelPath,
    load,
    close: async () => {
      for (const t of opened) await t.dispose();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
