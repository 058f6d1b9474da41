// Sampling on the token-by-token path that reports log-probabilities. vLLM reports the raw model's
// log-probabilities (before temperature, penalties, logit_bias and grammar), but node-llama-cpp
// returns logits after its sampler chain. So here the engine's chain is left neutral (temperature
// 1, nothing else) and its logits are the raw ones; when the request asks for nothing beyond that,
// the engine's own draw is taken as is. Otherwise every token's raw logit comes back and the token
// is drawn here, in vLLM's order: penalties, logit_bias and bans, the grammar (structured outputs),
// temperature, top_k, top_p, min_p. That costs one pass over the vocabulary per token (plus one
// grammar check per token of it under a grammar), paid only by such requests.
import { LlamaGrammarEvaluationState, type LlamaGrammar, type LlamaModel, type Token } from "node-llama-cpp";
import { Prng } from "../../../core/prng.js";
import { NOTHING_LEFT_TO_SAMPLE, type GenerateRequest } from "../protocol.js";
import { EngineRequestError } from "./errors.js";
import { grammarCalls, type GrammarCalls } from "./grammar-state.js";
import type { SamplingPlan } from "./sampling.js";

export class RawLogitSampler {
  /** The engine's draw is exactly the requested distribution (temperature 1, nothing else). */
  readonly passThrough: boolean;
  /**
   * Greedy on the raw logits (temperature 0, nothing else): the engine's greedy draw is the token,
   * and the top 1 besides (lm-eval's scoring asks for this; no pass over all logits in JS).
   */
  readonly greedy: boolean;
  private readonly grammar: GrammarCalls | null;
  private readonly rng: Prng;

  constructor(
    private readonly model: LlamaModel,
    private readonly request: GenerateRequest,
    private readonly sampling: SamplingPlan,
    grammar: LlamaGrammar | null,
    seed: number,
  ) {
    const s = request.sampling;
    this.passThrough =
      grammar === null &&
      s.temperature === 1 &&
      (s.topK ?? 0) <= 0 &&
      (s.topP ?? 1) >= 1 &&
      (s.minP ?? 0) <= 0 &&
      rawLogits(request, sampling);
    this.greedy = grammar === null && s.temperature <= 0 && rawLogits(request, sampling);
    this.grammar = grammar ? grammarCalls(model, new LlamaGrammarEvaluationState({ model, grammar })) : null;
    this.rng = new Prng(seed, "logprob-sampling");
  }

  /** What to ask the engine for at one step: raw logits (the top ones, or all when drawing here). */
  generateNext(wantTop: number, seed: number | undefined): object {
    if (this.greedy) {
      // The selected token is the arg-max; only a top k beyond it needs llama.cpp's sort.
      return { token: true, logits: { filter: { tokens: [], includeTop: wantTop > 1 ? wantTop : 0, includeSelected: true } }, totalLogitWeight: true, options: { temperature: 0 } };
    }
    return {
      token: true,
      logits: this.passThrough ? { filter: { tokens: [], includeTop: wantTop, includeSelected: true } } : true,
      totalLogitWeight: true,
      options: { temperature: 1, topK: 0, topP: 1, minP: 0, ...(seed !== undefined ? { seed } : {}) },
    };
  }

  /** The token to produce, given the engine's draw and the raw logits of this step. */
  choose(picked: Token, logits: ReadonlyMap<Token, number>, generated: readonly Token[], promptTokens: readonly Token[]): Token {
    if (this.passThrough || this.greedy) return picked;
    const token = this.draw(logits, generated, promptTokens);
    // End tokens close the generation; llama.cpp does not feed them to the grammar either.
    if (this.grammar && !this.model.isEogToken(token)) this.grammar.accept(token);
    return token;
  }

  private draw(logits: ReadonlyMap<Token, number>, generated: readonly Token[], promptTokens: readonly Token[]): Token {
    const s = this.request.sampling;
    const bans = this.sampling.bansAfter(generated);
    const bias = this.request.logitBias;
    const counts = new Map<number, number>();
    for (const token of generated) counts.set(token, (counts.get(token) ?? 0) + 1);
    const penalty = s.repetitionPenalty ?? 1;
    // vLLM: the repetition penalty sees prompt and output, frequency and presence the output only.
    const repeated = penalty !== 1 ? new Set<number>([...promptTokens, ...generated]) : null;
    const grammar = this.grammar;
    const candidates: { token: Token; logit: number }[] = [];
    for (const [token, raw] of logits) {
      if (raw === -Infinity || bans.isBanned(token)) continue;
      let logit = raw;
      if (repeated?.has(token)) logit = logit > 0 ? logit / penalty : logit * penalty;
      const count = counts.get(token) ?? 0;
      if (count > 0) logit -= count * s.frequencyPenalty + s.presencePenalty;
      logit += bias[String(token)] ?? 0;
      if (grammar && !grammar.accepts(token)) continue;
      candidates.push({ token, logit });
    }
    if (candidates.length === 0) throw new EngineRequestError("bad_request", NOTHING_LEFT_TO_SAMPLE);
    candidates.sort((a, b) => b.logit - a.logit);
    if (s.temperature <= 0) return candidates[0]!.token;
    let kept = s.topK !== null && s.topK > 0 ? candidates.slice(0, s.topK) : candidates;
    const max = kept[0]!.logit;
    const weights = kept.map((c) => Math.exp((c.logit - max) / s.temperature));
    const total = weights.reduce((a, b) => a + b, 0);
    let probabilities = weights.map((w) => w / total);
    if (s.topP !== null && s.topP < 1) {
      let mass = 0;
      let cut = probabilities.length;
      for (let i = 0; i < probabilities.length; i++) {
        mass += probabilities[i]!;
        if (mass >= s.topP) {
          cut = i + 1;
          break;
        }
      }
      kept = kept.slice(0, cut);
      probabilities = probabilities.slice(0, cut);
    }
    if (s.minP !== null && s.minP > 0) {
      const floor = probabilities[0]! * s.minP;
      const keep = probabilities.filter((p) => p >= floor).length;
      kept = kept.slice(0, keep);
      probabilities = probabilities.slice(0, keep);
    }
    let draw = this.rng.uniform() * probabilities.reduce((a, b) => a + b, 0);
    for (let i = 0; i < kept.length; i++) {
      draw -= probabilities[i]!;
      if (draw <= 0) return kept[i]!.token;
    }
    return kept[kept.length - 1]!.token;
  }
}

/** Nothing changes the raw logits before the draw: no penalties, logit_bias or bans. */
function rawLogits(request: GenerateRequest, sampling: SamplingPlan): boolean {
  const s = request.sampling;
  return s.frequencyPenalty === 0 && s.presencePenalty === 0 && (s.repetitionPenalty ?? 1) === 1 && Object.keys(request.logitBias).length === 0 && !sampling.hasBias();
}
