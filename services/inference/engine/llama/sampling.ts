// Request sampling settings -> node-llama-cpp evaluation options for one step. Token biases
// (logit_bias, bad words, allowed ids, and EOS suppression before min_tokens) are rebuilt per step
// only when they change.
import { randomInt } from "node:crypto";
import { TokenBias, type LlamaModel, type Token } from "node-llama-cpp";
import type { GenerateRequest } from "../protocol.js";
import type { NextTokenBans } from "./grammar-guard.js";
import { endOfGenerationTokens, overlongLeadByteTokens, vocabSize } from "./model-info.js";

export interface StepOptions {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed?: number;
  repeatPenalty?: { punishTokens: () => Token[]; penalty: number; frequencyPenalty: number; presencePenalty: number; maxPunishTokens: number };
  tokenBias?: TokenBias;
}

export class SamplingPlan {
  // A plain number given to TokenBias is a probability; logit_bias values are logits.
  private readonly baseBias: Map<Token, { logit: number } | "never">;
  private readonly suppressEnd: Token[];
  private readonly badWordTokens: Token[][];
  /** The "never" entries of baseBias (empty with allowed_token_ids, where bans are "all but"). */
  private readonly neverTokens: Token[];
  private biasCache = new Map<string, TokenBias>();
  private readonly baseSeed: number;

  constructor(
    private readonly model: LlamaModel,
    private readonly request: GenerateRequest,
  ) {
    this.baseSeed = request.sampling.seed ?? randomInt(2 ** 32);
    const size = vocabSize(model);
    this.baseBias = new Map();
    for (const [token, bias] of Object.entries(request.logitBias)) this.baseBias.set(asToken(Number(token)), bias <= -100 ? "never" : { logit: bias });
    if (request.grammar !== null) for (const token of overlongLeadByteTokens(model)) this.baseBias.set(asToken(token), "never");
    if (request.allowedTokenIds) {
      const allowed = new Set(request.allowedTokenIds);
      for (let token = 0; token < size; token++) if (!allowed.has(token)) this.baseBias.set(asToken(token), "never");
    }
    // Before min_tokens, neither the end-of-generation tokens nor the stop token ids may come (vLLM).
    this.suppressEnd = [...new Set([...endOfGenerationTokens(model), ...request.stopTokenIds.map(asToken)])];
    this.badWordTokens = request.badWords.map((word) => model.tokenize(word, false)).filter((t) => t.length > 0);
    this.neverTokens = request.allowedTokenIds ? [] : [...this.baseBias].filter(([, bias]) => bias === "never").map(([token]) => token);
  }

  /** A choice's own seed (so n choices differ), from the request seed or a random one. */
  choiceSeed(choice: number): number {
    return (this.baseSeed + choice * 1_000_003) >>> 0;
  }

  /** Whether any token bias can apply (logit_bias, allowed ids, bad words, min_tokens). */
  hasBias(): boolean {
    return this.baseBias.size > 0 || this.badWordTokens.length > 0 || this.request.minTokens > 0;
  }

  /** Options for generating the token after `generated` (choice-specific seed so n choices differ). */
  stepOptions(generated: readonly Token[], promptTokens: readonly Token[], choice: number): StepOptions {
    const s = this.request.sampling;
    // Explicit neutral values: node-llama-cpp's own defaults (top_k 40, top_p 0.95) are not OpenAI's.
    const options: StepOptions = {
      temperature: s.temperature,
      topK: s.topK !== null && s.topK > 0 ? s.topK : 0,
      topP: s.topP ?? 1,
      minP: s.minP ?? 0,
    };
    // Without a request seed each request (and each of its n choices) draws its own.
    options.seed = (this.baseSeed + choice * 1_000_003 + generated.length * 7919) >>> 0;
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

  /** What the bias of the step after `generated` forbids (see grammar-guard.ts). */
  bansAfter(generated: readonly Token[]): NextTokenBans {
    const { suppressing, banned } = this.stepBans(generated);
    const extra = new Set([...banned, ...(suppressing ? this.suppressEnd : [])]);
    const isBanned = (token: Token) => this.baseBias.get(token) === "never" || extra.has(token);
    const allowed = this.request.allowedTokenIds;
    if (allowed) return { isBanned, listed: null, onlyAllowed: allowed.map(asToken) };
    return { isBanned, listed: [...this.neverTokens, ...extra], onlyAllowed: null };
  }

  private stepBans(generated: readonly Token[]): { suppressing: boolean; banned: Token[] } {
    const suppressing = generated.length < this.request.minTokens;
    const banned: Token[] = [];
    for (const word of this.badWordTokens) {
      const prefix = word.slice(0, -1);
      const tail = generated.slice(generated.length - prefix.length);
      if (prefix.every((t, i) => tail[i] === t)) banned.push(word[word.length - 1] as Token);
    }
    return { suppressing, banned };
  }

  private biasFor(generated: readonly Token[]): TokenBias | undefined {
    const { suppressing, banned } = this.stepBans(generated);
    if (!suppressing && banned.length === 0 && this.baseBias.size === 0) return undefined;
    const key = `${suppressing ? 1 : 0}:${banned.join(",")}`;
    let bias = this.biasCache.get(key);
    if (!bias) {
      bias = new TokenBias(this.model.tokenizer);
      for (const [token, value] of this.baseBias) setBias(bias, token, value);
      if (suppressing) for (const token of this.suppressEnd) setBias(bias, token, "never");
      for (const token of banned) setBias(bias, token, "never");
      this.biasCache.set(key, bias);
    }
    return bias;
  }
}

/**
 * TokenBias.set skips end-of-generation tokens, but logit_bias, allowed_token_ids and min_tokens
 * apply to them too (as in vLLM), so entries go straight into the map the native sampler reads
 * (an internal field of the pinned version; the native side has no such exception).
 */
function setBias(bias: TokenBias, token: Token, value: { logit: number } | "never"): void {
  (bias as unknown as { _biases: Map<Token, number> })._biases.set(token, value === "never" ? -Infinity : value.logit);
}

/** Token ids from requests are plain numbers; node-llama-cpp brands its token type. */
export function asToken(id: number): Token {
  return id as Token;
}
