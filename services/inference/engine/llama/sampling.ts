// Request sampling settings -> node-llama-cpp evaluation options for one step. Token biases
// (logit_bias, bad words, allowed ids, and EOS suppression before min_tokens) are rebuilt per step
// only when they change.
import { TokenBias, type LlamaModel, type Token } from "node-llama-cpp";
import type { GenerateRequest } from "../protocol.js";
import { vocabSize } from "./model-info.js";

export interface StepOptions {
  temperature: number;
  topK?: number;
  topP?: number;
  minP?: number;
  seed?: number;
  repeatPenalty?: { punishTokens: () => Token[]; penalty: number; frequencyPenalty: number; presencePenalty: number; maxPunishTokens: number };
  tokenBias?: TokenBias;
}

export class SamplingPlan {
  private readonly baseBias: Map<Token, number | "never">;
  private readonly suppressEnd: Token[];
  private readonly badWordTokens: Token[][];
  private biasCache = new Map<string, TokenBias>();

  constructor(
    private readonly model: LlamaModel,
    private readonly request: GenerateRequest,
  ) {
    const size = vocabSize(model);
    this.baseBias = new Map();
    for (const [token, bias] of Object.entries(request.logitBias)) this.baseBias.set(asToken(Number(token)), bias <= -100 ? "never" : bias);
    if (request.allowedTokenIds) {
      const allowed = new Set(request.allowedTokenIds);
      for (let token = 0; token < size; token++) if (!allowed.has(token)) this.baseBias.set(asToken(token), "never");
    }
    const eog: Token[] = [];
    for (let token = 0; token < size; token++) if (model.isEogToken(asToken(token))) eog.push(asToken(token));
    this.suppressEnd = [...eog, ...request.stopTokenIds.map(asToken)];
    this.badWordTokens = request.badWords.map((word) => model.tokenize(word, false)).filter((t) => t.length > 0);
  }

  /** Options for generating the token after `generated` (choice-specific seed so n choices differ). */
  stepOptions(generated: readonly Token[], promptTokens: readonly Token[], choice: number): StepOptions {
    const s = this.request.sampling;
    const options: StepOptions = { temperature: s.temperature };
    if (s.topK !== null && s.topK > 0) options.topK = s.topK;
    if (s.topP !== null && s.topP < 1) options.topP = s.topP;
    if (s.minP !== null && s.minP > 0) options.minP = s.minP;
    if (s.seed !== null) options.seed = (s.seed + choice * 1_000_003 + generated.length * 7919) >>> 0;
    if (s.frequencyPenalty !== 0 || s.presencePenalty !== 0 || (s.repetitionPenalty !== null && s.repetitionPenalty !== 1)) {
      // vLLM: the repetition penalty sees prompt and output, the frequency and presence penalties the output only.
      const punish = s.repetitionPenalty !== null && s.repetitionPenalty !== 1 ? () => [...promptTokens, ...generated] : () => [...generated];
      options.repeatPenalty = {
        punishTokens: punish,
        penalty: s.repetitionPenalty ?? 1,
        frequencyPenalty: s.frequencyPenalty,
        presencePenalty: s.presencePenalty,
        maxPunishTokens: 2048,
      };
    }
    const bias = this.biasFor(generated);
    if (bias) options.tokenBias = bias;
    return options;
  }

  private biasFor(generated: readonly Token[]): TokenBias | undefined {
    const suppressing = generated.length < this.request.minTokens || this.request.ignoreEos;
    const banned: Token[] = [];
    for (const word of this.badWordTokens) {
      const prefix = word.slice(0, -1);
      const tail = generated.slice(generated.length - prefix.length);
      if (prefix.every((t, i) => tail[i] === t)) banned.push(word[word.length - 1] as Token);
    }
    if (!suppressing && banned.length === 0 && this.baseBias.size === 0) return undefined;
    const key = `${suppressing ? 1 : 0}:${banned.join(",")}`;
    let bias = this.biasCache.get(key);
    if (!bias) {
      bias = new TokenBias(this.model.tokenizer);
      for (const [token, value] of this.baseBias) bias.set(token, value);
      if (suppressing) for (const token of this.suppressEnd) if (!this.request.ignoreEos || this.model.isEogToken(token)) bias.set(token, "never");
      for (const token of banned) bias.set(token, "never");
      this.biasCache.set(key, bias);
    }
    return bias;
  }
}

/** Token ids from requests are plain numbers; node-llama-cpp brands its token type. */
export function asToken(id: number): Token {
  return id as Token;
}
