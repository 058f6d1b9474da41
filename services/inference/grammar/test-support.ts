// Test helpers: grammar membership checks, and grammar-constrained sampling on the built-in tiny
// model through the low-level LlamaContextSequence.evaluate.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LlamaGrammarEvaluationState, TokenBias, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaGrammar, type LlamaModel, type Token } from "node-llama-cpp";
import { ensureBuiltInModel } from "../../weights/index.js";
import { loadLlama } from "../engine/llama/binary.js";

/**
 * Whether llama.cpp's grammar matches the whole of `text` (it parses the grammar again and feeds
 * the code points). Uses node-llama-cpp's internal LlamaGrammar._testText, so tests only.
 */
export function grammarAccepts(grammar: LlamaGrammar, text: string): boolean {
  const internal = grammar as unknown as { _testText?: (text: string) => boolean };
  if (typeof internal._testText !== "function") throw new Error("node-llama-cpp no longer has LlamaGrammar._testText; update grammarAccepts");
  return internal._testText.call(grammar, text);
}

export interface TinyModel {
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  sequence: LlamaContextSequence;
  prompt: Token[];
  /** Bans the single-byte tokens that can start overlong or out-of-range UTF-8 (see below). */
  utf8Guard: TokenBias;
  dispose(): Promise<void>;
}

/**
 * Lead bytes C0 C1 (always overlong), E0 and F0 (can start overlong 3- and 4-byte forms), F5-FF
 * (beyond U+10FFFF). The tiny model's token ids 0-255 are the single bytes. llama.cpp's grammar
 * sees an overlong sequence such as E0 8A A2 in the same partial state as the valid CA A2, so no
 * grammar can refuse it; without this ban the random-weight model does write them now and then,
 * and the text decodes to U+FFFD characters (breaking e.g. maxLength). A real engine needs the
 * same guard for vocabularies with byte tokens.
 */
const OVERLONG_LEAD_BYTES = [0xc0, 0xc1, 0xe0, 0xf0, ...Array.from({ length: 11 }, (_, i) => 0xf5 + i)];

export async function loadTinyModel(): Promise<TinyModel> {
  const dir = await mkdtemp(join(tmpdir(), "grammar-test-"));
  const llama = await loadLlama();
  const model = await llama.loadModel({ modelPath: await ensureBuiltInModel("tiny-chat", dir) });
  const context = await model.createContext({ threads: 1, contextSize: 1024, sequences: 1 });
  const sequence = context.getSequence();
  const prompt = model.tokenize("<|im_start|>user\nAnswer in the required format.<|im_end|>\n<|im_start|>assistant\n", true);
  const utf8Guard = new TokenBias(model.tokenizer);
  for (const byte of OVERLONG_LEAD_BYTES) utf8Guard.set(byte as Token, "never");
  return {
    llama,
    model,
    context,
    sequence,
    prompt,
    utf8Guard,
    async dispose() {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface Sample {
  text: string;
  tokens: number;
  /** Ended with an end-of-generation token (forced by the grammar once it is complete). */
  finished: boolean;
}

/**
 * One grammar-constrained completion. The grammar sampler masks every token the grammar cannot
 * take next; an end-of-generation token is allowed only where the grammar may end, and is the only
 * choice once it cannot continue, so an EOG token marks a complete match. yieldEogToken: true makes
 * the generator hand that token over (otherwise it just ends) and the loop stops on it.
 */
export async function sampleWithGrammar(tiny: TinyModel, grammar: LlamaGrammar, seed: number, maxTokens = 200): Promise<Sample> {
  const { model, sequence, prompt, utf8Guard } = tiny;
  await sequence.clearHistory();
  const grammarEvaluationState = new LlamaGrammarEvaluationState({ model, grammar });
  const generated: Token[] = [];
  let finished = false;
  const iterator = sequence.evaluate(prompt, { temperature: 1, seed, grammarEvaluationState, tokenBias: utf8Guard, yieldEogToken: true });
  try {
    for await (const token of iterator) {
      if (model.isEogToken(token)) {
        finished = true;
        break;
      }
      generated.push(token);
      if (generated.length >= maxTokens) break;
    }
  } finally {
    await iterator.return();
  }
  return { text: model.detokenize(generated), tokens: generated.length, finished };
}
