// One choice on one context sequence, token by token through controlledEvaluate, so every step can
// report its token's log-probability and top alternatives (from the raw logits and the total logit
// weight) and apply per-step sampling options.
import { LlamaGrammarEvaluationState, TokenBias, type LlamaContextSequence, type LlamaGrammar, type LlamaModel, type Token } from "node-llama-cpp";
import { NOTHING_LEFT_TO_SAMPLE, type GenerateRequest, type TokenLogprobOut } from "../protocol.js";
import { EngineRequestError } from "./errors.js";
import { grammarLeavesAToken } from "./grammar-guard.js";
import { RawLogitSampler } from "./logprob-sampling.js";
import { IncrementalDetokenizer } from "./detokenizer.js";
import { tokenBytes } from "./model-info.js";
import type { SamplingPlan } from "./sampling.js";
import { repeats } from "../repetition.js";
import { TextStream } from "../text-stream.js";

export interface ChoiceEvents {
  delta(text: string, tokenIds: number[], logprobs: TokenLogprobOut[]): void;
  finished(finishReason: "stop" | "length", stopReason: number | string | null, completionTokens: number): void;
}

export type NextOutput = { token?: Token | null; logits?: Map<Token, number>; totalLogitWeight?: number };

export async function generateChoice(options: {
  model: LlamaModel;
  sequence: LlamaContextSequence;
  request: GenerateRequest;
  sampling: SamplingPlan;
  promptTokens: Token[];
  /** Prompt tokens already in the sequence's cache (reused, not evaluated again). */
  cachedTokens: number;
  choice: number;
  maxTokens: number;
  /** Structured outputs: the grammar every choice follows (a state of its own per choice). */
  grammar: LlamaGrammar | null;
  signal: AbortSignal;
  events: ChoiceEvents;
}): Promise<void> {
  const { model, sequence, request, sampling, promptTokens, choice, signal, events } = options;
  const output = outputText(model, request);
  const wantTop = request.logprobs ? Math.max(1, request.topLogprobs) : 0;
  const stream = new TextStream(request.stop, request.includeStopStrInOutput);
  const generated: Token[] = [];

  const pending = promptTokens.slice(options.cachedTokens);
  let held: { tokenIds: number[]; logprobs: TokenLogprobOut[] } = { tokenIds: [], logprobs: [] };
  // Each sampled token; true when generation ends with it.
  const accept = (token: Token, next: NextOutput | undefined): boolean => {
    const isEnd = model.isEogToken(token) && !request.ignoreEos && generated.length >= request.minTokens;
    const stopId = request.stopTokenIds.includes(token) ? token : null;
    if (isEnd || stopId !== null) {
      if (request.includeStopToken) {
        // Its id and log-probability only: its text stays out of the output, as a stop string's does.
        generated.push(token);
        held.tokenIds.push(token);
        if (wantTop > 0 && next) held.logprobs.push(tokenLogprob(model, token, next, request));
      }
      emit(stream.flush(output.full()));
      events.finished("stop", stopId ?? (isEnd ? token : null), generated.length);
      return true;
    }
    generated.push(token);
    held.tokenIds.push(token);
    if (wantTop > 0 && next) held.logprobs.push(tokenLogprob(model, token, next, request));
    const { delta, stop } = stream.push(output.push(token));
    if (stop !== null) {
      emit(delta);
      events.finished("stop", stop, generated.length);
      return true;
    }
    if (delta) emit(delta);
    if (request.repetitionDetection && repeats(generated, request.repetitionDetection)) {
      emit(stream.flush(output.full()));
      events.finished("stop", "repetition", generated.length);
      return true;
    }
    if (generated.length >= options.maxTokens || sequence.nextTokenIndex >= sequence.contextSize - 1) {
      emit(stream.flush(output.full()));
      events.finished("length", null, generated.length);
      return true;
    }
    return false;
  };

  if (wantTop === 0) {
    // No log-probabilities wanted: node-llama-cpp's generator keeps one sampler (and its seeded
    // random state) for the whole generation, which is much cheaper per token.
    const first = sampling.stepOptions(generated, promptTokens, choice);
    const grammarState = options.grammar ? new LlamaGrammarEvaluationState({ model, grammar: options.grammar }) : null;
    // Checked before every sample: llama.cpp aborts the process when nothing is left to sample.
    const guard = grammarState && sampling.hasBias() ? () => {
      if (!grammarLeavesAToken(model, grammarState, sampling.bansAfter(generated))) throw new EngineRequestError("bad_request", NOTHING_LEFT_TO_SAMPLE);
    } : () => {};
    guard();
    const iterator = sequence.evaluate(pending, {
      ...first,
      // The grammar masks every token it cannot take; an end token only where it may end.
      ...(grammarState ? { grammarEvaluationState: grammarState } : {}),
      ...(sampling.hasBias() ? { tokenBias: () => sampling.stepOptions(generated, promptTokens, choice).tokenBias ?? emptyBias(model) } : {}),
      yieldEogToken: true,
    });
    try {
      for await (const token of iterator) {
        if (signal.aborted || accept(token, undefined)) break;
        guard();
      }
    } finally {
      await iterator.return();
    }
    return;
  }

  // Log-probabilities are the raw model's: the engine's sampler chain stays neutral and the token
  // is drawn from raw logits where the request asks for more (logprob-sampling.ts).
  const rawSampler = new RawLogitSampler(model, request, sampling, options.grammar, sampling.choiceSeed(choice));
  const nextStep = () => ({ generateNext: rawSampler.generateNext(wantTop, sampling.stepOptions(generated, promptTokens, choice).seed) });
  // The prompt (minus what the cache already holds), its last token asking for the first output token.
  const input = pending.map((token, index) => (index === pending.length - 1 ? ([token, nextStep()] as const) : token));
  let outputs = await sequence.controlledEvaluate(input as Parameters<LlamaContextSequence["controlledEvaluate"]>[0]);
  let next = outputs[outputs.length - 1]?.next as NextOutput | undefined;
  while (!signal.aborted) {
    const picked = next?.token;
    if (picked === undefined || picked === null) throw new Error("the engine produced no token");
    const token = rawSampler.choose(picked, next?.logits ?? new Map(), generated, promptTokens);
    if (accept(token, next)) return;
    outputs = await sequence.controlledEvaluate([[token, nextStep()] as Parameters<LlamaContextSequence["controlledEvaluate"]>[0][number]]);
    next = outputs[0]?.next as NextOutput | undefined;
  }

  function emit(text: string) {
    if (!text && held.tokenIds.length === 0) return;
    events.delta(text, held.tokenIds, held.logprobs);
    held = { tokenIds: [], logprobs: [] };
  }
}

/** log p(token) = logit - max - log(sum exp(logit - max)), from the raw logits of this step. */
export function tokenLogprob(model: LlamaModel, token: Token, next: NextOutput, request: GenerateRequest): TokenLogprobOut {
  const logits = next.logits ?? new Map<Token, number>();
  // The map holds every token of the vocabulary under a grammar: one pass, no spread, no full sort.
  const top = highest(logits, request.topLogprobs);
  let max = -Infinity;
  for (const logit of logits.values()) if (logit > max) max = logit;
  const logTotal = Math.log(next.totalLogitWeight ?? 1);
  const entry = (t: Token, logit: number) => {
    const text = model.detokenize([t], true);
    return { token: request.returnTokensAsTokenIds ? `token_id:${t}` : text, logprob: logit - max - logTotal, bytes: tokenBytes(model, t) };
  };
  const selected = entry(token, logits.get(token) ?? max);
  return { ...selected, top_logprobs: top.map(([t, logit]) => entry(t, logit)) };
}

/** The k entries with the highest logits, highest first (k is at most 20). */
function highest(logits: ReadonlyMap<Token, number>, k: number): [Token, number][] {
  const best: [Token, number][] = [];
  if (k <= 0) return best;
  for (const entry of logits) {
    if (best.length === k && entry[1] <= best[k - 1]![1]) continue;
    let at = best.length;
    while (at > 0 && best[at - 1]![1] < entry[1]) at--;
    best.splice(at, 0, entry);
    if (best.length > k) best.pop();
  }
  return best;
}

const emptyBiases = new WeakMap<LlamaModel, TokenBias>();
function emptyBias(model: LlamaModel): TokenBias {
  let bias = emptyBiases.get(model);
  if (!bias) emptyBiases.set(model, (bias = new TokenBias(model.tokenizer)));
  return bias;
}

/**
 * Output text as vLLM's detokenizer writes it: special tokens dropped (skip_special_tokens), or
 * kept and, with spaces_between_special_tokens, set apart from their neighbours by a space. `push`
 * returns the text so far (up to a whole character where it is decoded incrementally).
 */
export function outputText(model: LlamaModel, request: GenerateRequest): { push(token: Token): string; full(): string } {
  if (request.skipSpecialTokens || !request.spacesBetweenSpecialTokens) return new IncrementalDetokenizer((tokens) => model.detokenize(tokens, !request.skipSpecialTokens));
  // Special tokens kept and spaced: decoded whole each time (rare).
  const tokens: Token[] = [];
  return { push: (token) => (tokens.push(token), spacedText(model, tokens)), full: () => spacedText(model, tokens) };
}

function spacedText(model: LlamaModel, tokens: Token[]): string {
  const parts: string[] = [];
  let run: Token[] = [];
  for (const token of tokens) {
    if (model.isSpecialToken(token)) {
      if (run.length > 0) parts.push(model.detokenize(run, true));
      parts.push(model.detokenize([token], true));
      run = [];
    } else run.push(token);
  }
  if (run.length > 0) parts.push(model.detokenize(run, true));
  return parts.join(" ");
}
