// Beam search (use_beam_search) as vLLM's serving layer runs it: n beams; at each step every live
// beam offers its 2n most likely next tokens (raw log-probabilities, so temperature and the other
// sampling knobs do not enter); candidates ending a beam (an end-of-generation token, or a stop
// token id) complete it, the n best of the rest by cumulative log-probability go on. At the end the
// completed and the live beams are ranked by cumulative log-probability / length ** length_penalty,
// where the length counts the prompt and the generated tokens but not the ending token (vLLM's
// get_beam_search_score), and the n best are the choices, best first.
//
// Beams are sequences of one context: the prompt is evaluated once, and a beam that branches off
// another gets a copy of its parent's KV cache (sequence-fork.ts) instead of evaluating the prompt
// again, so each beam costs one token per step, batched with everything else in flight.
//
// Beyond vLLM (whose beam search ignores them): stop strings, repetition_detection and min_tokens
// apply per beam as they do to sampling, and the search ends as soon as no live beam can still
// reach the n best completed scores (which gives vLLM's result without running every step).
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { GenerateRequest, TokenLogprobOut } from "../protocol.js";
import { repeats } from "../repetition.js";
import { TextStream } from "../text-stream.js";
import { outputText, tokenLogprob, type NextOutput } from "./generate.js";
import { copySequenceState } from "./sequence-fork.js";

/** One step's distribution over the next token, as far as the search looks at it. */
interface Step {
  /** The most likely tokens with their raw logits, most likely first. */
  top: [Token, number][];
  next: NextOutput;
  /** log of the softmax normaliser: logprob = logit - max - logTotal. */
  offset: number;
}

interface Beam {
  /** Generated tokens (an ending token is not one of them). */
  tokens: Token[];
  /** The step each token came from (for its log-probability and alternatives). */
  steps: Step[];
  cum: number;
  /** The sequence holding this beam's tokens (live beams only). */
  sequence: number;
  /** The distribution after the last token (live beams, once evaluated). */
  next: Step | null;
}

interface Finished {
  tokens: Token[];
  steps: Step[];
  cum: number;
  /** The token that ended the beam (an end-of-generation or stop token), scored but not in `tokens`. */
  ending: { token: Token; step: Step } | null;
  /** The text, where a stop string cut it; otherwise decoded only if the beam is returned. */
  text: string | null;
  finishReason: "stop" | "length";
  stopReason: number | string | null;
  score: number;
}

export interface BeamChoiceEvents {
  choice(index: number, out: { text: string; tokenIds: number[]; logprobs: TokenLogprobOut[]; finishReason: "stop" | "length"; stopReason: number | string | null }): void;
}

export async function beamSearch(options: {
  model: LlamaModel;
  sequences: LlamaContextSequence[];
  request: GenerateRequest;
  lengthPenalty: number;
  promptTokens: Token[];
  /** Prompt tokens the first sequence already holds. */
  cachedTokens: number;
  maxTokens: number;
  signal: AbortSignal;
  events: BeamChoiceEvents;
}): Promise<void> {
  const { model, sequences, request, promptTokens, signal } = options;
  const width = request.n;
  const candidatesPerBeam = 2 * width;
  const endTokens = new Set<number>(request.stopTokenIds);
  const isEnding = (token: Token) => (model.isEogToken(token) && !request.ignoreEos) || endTokens.has(token);
  // Enough of the top for 2n candidates after removing ending tokens held back by min_tokens, and
  // for the alternatives the client asked to see.
  const fetchTop = Math.max(candidatesPerBeam + endTokens.size + 4, request.logprobs ? request.topLogprobs : 0);
  const score = (cum: number, generated: number) => cum / Math.pow(promptTokens.length + generated, options.lengthPenalty);
  const maxLength = promptTokens.length + options.maxTokens;
  /** The best score any continuation of a live beam could reach (log-probabilities only fall). */
  const bound = (beam: Beam) => (options.lengthPenalty > 0 ? beam.cum / Math.pow(maxLength, options.lengthPenalty) : score(beam.cum, beam.tokens.length));

  const completed: Finished[] = [];
  const complete = (beam: Pick<Beam, "tokens" | "steps" | "cum">, end: Pick<Finished, "ending" | "finishReason" | "stopReason" | "text">) => {
    completed.push({ tokens: beam.tokens, steps: beam.steps, cum: beam.cum, ...end, score: score(beam.cum, beam.tokens.length) });
    completed.sort((a, b) => b.score - a.score);
    // Never more than n are kept: one that falls out of the n best can never come back.
    completed.length = Math.min(completed.length, width);
  };

  const first = sequences[0] as LlamaContextSequence;
  const start = Math.min(options.cachedTokens, promptTokens.length - 1);
  if (first.nextTokenIndex > start) await first.eraseContextTokenRanges([{ start, end: first.nextTokenIndex }]);
  const pending = promptTokens.slice(start);
  const firstOut = await first.controlledEvaluate(withNext(pending, fetchTop));
  let live: Beam[] = [{ tokens: [], steps: [], cum: 0, sequence: 0, next: readStep(firstOut[firstOut.length - 1]?.next as NextOutput | undefined) }];

  for (let generated = 0; generated < options.maxTokens && live.length > 0; generated++) {
    if (signal.aborted) return;
    const candidates: { parent: Beam; token: Token; cum: number }[] = [];
    for (const beam of live) {
      const step = beam.next as Step;
      let taken = 0;
      for (const [token, logit] of step.top) {
        if (taken === candidatesPerBeam) break;
        const cum = beam.cum + (logit - step.offset);
        if (isEnding(token)) {
          // Before min_tokens a beam may not end: the token is no candidate at all.
          if (beam.tokens.length < request.minTokens) continue;
          taken++;
          complete({ ...beam, cum }, { ending: { token, step }, finishReason: "stop", stopReason: token, text: null });
          continue;
        }
        taken++;
        candidates.push({ parent: beam, token, cum });
      }
    }
    candidates.sort((a, b) => b.cum - a.cum);
    const next: Beam[] = [];
    for (const { parent, token, cum } of candidates.slice(0, width)) {
      const beam: Beam = { tokens: [...parent.tokens, token], steps: [...parent.steps, parent.next as Step], cum, sequence: parent.sequence, next: null };
      const stopped = stopCheck(model, request, beam.tokens);
      if (stopped) complete(beam, { ending: null, finishReason: "stop", ...stopped });
      else if (beam.tokens.length >= options.maxTokens) complete(beam, { ending: null, finishReason: "length", stopReason: null, text: null });
      else next.push(beam);
    }
    live = next;
    if (completed.length === width && live.every((beam) => bound(beam) <= (completed[width - 1] as Finished).score)) break;
    if (live.length === 0) break;
    const inputs = await place(live, sequences, promptTokens.length);
    const outputs = await Promise.all(live.map((beam, index) => (sequences[beam.sequence] as LlamaContextSequence).controlledEvaluate(withNext(inputs[index] as Token[], fetchTop))));
    live.forEach((beam, index) => {
      const out = outputs[index] as Awaited<ReturnType<LlamaContextSequence["controlledEvaluate"]>>;
      beam.next = readStep(out[out.length - 1]?.next as NextOutput | undefined);
    });
  }
  if (signal.aborted) return;
  // Beams still live when the tokens or the context ran out end on length.
  for (const beam of live) complete(beam, { ending: null, finishReason: "length", stopReason: null, text: null });

  completed.forEach((beam, index) => {
    const scored = beam.ending ? [...beam.tokens, beam.ending.token] : beam.tokens;
    const steps = beam.ending ? [...beam.steps, beam.ending.step] : beam.steps;
    options.events.choice(index, {
      text: beam.text ?? decode(model, request, beam.tokens),
      // vLLM: the ending token is part of the output's token ids only with include_stop_str_in_output.
      tokenIds: beam.ending && request.includeStopStrInOutput ? scored : beam.tokens,
      // Every scored token, the ending one included, so the log-probabilities add up to the beam's cumulative one.
      logprobs: request.logprobs ? scored.map((token, i) => tokenLogprob(model, token, (steps[i] as Step).next, request)) : [],
      finishReason: beam.finishReason,
      stopReason: beam.stopReason,
    });
  });
}

/**
 * Puts every live beam in a sequence: the first child of a parent continues in the parent's
 * sequence; any other child takes a sequence no beam needs any more. That sequence usually holds a
 * beam that shared most of its tokens with the parent: when only a few tokens differ, they are
 * evaluated again with the child's next token (a few more tokens in the step's batch); otherwise
 * the parent's state is copied into it (sequence-fork.ts). Copies are made before any sequence
 * takes its next token. Returns the tokens each beam's sequence evaluates next (the last is the
 * one whose successor is scored).
 */
async function place(live: Beam[], sequences: LlamaContextSequence[], promptLength: number): Promise<Token[][]> {
  const kept = new Set<number>();
  const moving: Beam[] = [];
  for (const beam of live) {
    if (kept.has(beam.sequence)) moving.push(beam);
    else kept.add(beam.sequence);
  }
  const spare = sequences.map((_, index) => index).filter((index) => !kept.has(index));
  const pending = new Map<Beam, Token[]>();
  const erasures: Promise<void>[] = [];
  const copies = new Map<number, LlamaContextSequence[]>();
  for (const beam of moving) {
    const parent = sequences[beam.sequence] as LlamaContextSequence;
    // The spare sequence sharing the longest prefix with the beam's tokens (prompt, then generated).
    const tokens = [...parent.contextTokens];
    const ranked = spare.map((index) => ({ index, shared: (sequences[index] as LlamaContextSequence).compareContextTokens(tokens).firstDifferentIndex })).sort((a, b) => b.shared - a.shared);
    const best = ranked[0] as { index: number; shared: number };
    spare.splice(spare.indexOf(best.index), 1);
    const target = sequences[best.index] as LlamaContextSequence;
    if (best.shared >= promptLength && tokens.length - best.shared <= CATCH_UP_TOKENS) {
      if (target.nextTokenIndex > best.shared) erasures.push(target.eraseContextTokenRanges([{ start: best.shared, end: target.nextTokenIndex }]));
      pending.set(beam, [...tokens.slice(best.shared), beam.tokens[beam.tokens.length - 1] as Token]);
    } else copies.set(beam.sequence, [...(copies.get(beam.sequence) ?? []), target]);
    beam.sequence = best.index;
  }
  await Promise.all([...erasures, ...[...copies].map(([parent, targets]) => copySequenceState(sequences[parent] as LlamaContextSequence, targets))]);
  return live.map((beam) => pending.get(beam) ?? [beam.tokens[beam.tokens.length - 1] as Token]);
}

/**
 * Tokens a sequence evaluates again rather than copying another's state (see place): cheaper than
 * a copy once the parent's state is large (a long prompt), about even below that.
 */
const CATCH_UP_TOKENS = 4;

/** `tokens` to evaluate, the last one asking for the `top` most likely next tokens and the normaliser. */
function withNext(tokens: Token[], top: number): Parameters<LlamaContextSequence["controlledEvaluate"]>[0] {
  const ask = { generateNext: { logits: { filter: { tokens: [], includeTop: top } }, totalLogitWeight: true } };
  return tokens.map((token, index) => (index === tokens.length - 1 ? ([token, ask] as const) : token)) as Parameters<LlamaContextSequence["controlledEvaluate"]>[0];
}

function readStep(next: NextOutput | undefined): Step {
  const logits = next?.logits;
  if (!next || !logits || logits.size === 0) throw new Error("the engine returned no logits for a beam");
  const top = [...logits.entries()].sort((a, b) => b[1] - a[1]);
  const max = (top[0] as [Token, number])[1];
  return { top, next, offset: max + Math.log(next.totalLogitWeight ?? 1) };
}

function decode(model: LlamaModel, request: GenerateRequest, tokens: Token[]): string {
  const text = outputText(model, request);
  for (const token of tokens) text.push(token);
  return text.full().replace(/\uFFFD$/, "");
}

/** A stop string or a repetition that ends the beam now, with its text (cut as sampling cuts it). */
function stopCheck(model: LlamaModel, request: GenerateRequest, tokens: Token[]): { text: string | null; stopReason: string } | null {
  if (request.stop.length > 0) {
    const full = decode(model, request, tokens);
    const { delta, stop } = new TextStream(request.stop, request.includeStopStrInOutput).push(full);
    if (stop !== null) return { text: delta, stopReason: stop };
  }
  if (request.repetitionDetection && repeats(tokens, request.repetitionDetection)) return { text: null, stopReason: "repetition" };
  return null;
}
