// vLLM's prompt_logprobs (and a legacy completion's echoed log-probabilities): null for the first
// token, then each token's log-probability given the ones before it, plus the top k. The prompt
// goes through llama.cpp as one batch (split only at the context's batch size) with logits kept
// at every position; each position is then read back once. Reading costs O(vocabulary) per
// position where k <= 1: the engine's greedy draw is the arg-max (the top 1) and the sum of
// exp(logit - max) comes back with it, so nothing is sorted. k >= 2 asks llama.cpp for its top k,
// which sorts the vocabulary at each position.
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { PromptLogprobOut } from "../protocol.js";
import type { NextOutput } from "./generate.js";

type Input = Parameters<LlamaContextSequence["controlledEvaluate"]>[0];

/**
 * Clears the sequence and evaluates all but the last prompt token (that one is left for the first
 * generation step, whose logits give the first output token: it must not be evaluated twice).
 */
export async function promptLogprobs(model: LlamaModel, sequence: LlamaContextSequence, tokens: Token[], top: number): Promise<PromptLogprobOut[]> {
  await sequence.clearHistory();
  const evaluated = tokens.slice(0, -1);
  const input = evaluated.map((token, index) => [token, { generateNext: readBack(tokens[index + 1] as Token, top) }] as const);
  const outputs = input.length > 0 ? await sequence.controlledEvaluate(input as unknown as Input) : [];
  const result: PromptLogprobOut[] = [null];
  for (let index = 0; index < evaluated.length; index++) {
    result.push(entry(model, tokens[index + 1] as Token, outputs[index]?.next as NextOutput | undefined, top));
  }
  return result;
}

/** What one position returns: the actual next token's logit, the top k (or the arg-max), the total weight. */
function readBack(actual: Token, top: number): object {
  if (top >= 2) return { logits: { filter: { tokens: [actual], includeTop: top } }, totalLogitWeight: true };
  // Temperature 0 makes the engine's draw the greedy one (no sampler changes the logits).
  return { token: true, logits: { filter: { tokens: [actual], includeSelected: true } }, totalLogitWeight: true, options: { temperature: 0 } };
}

/**
 * The position's entry: the actual token and the top k by rank. Ranks come from what was read
 * back: the actual token outside the top k gets rank k + 1 (its exact rank would need the whole
 * vocabulary read back).
 */
function entry(model: LlamaModel, actual: Token, next: NextOutput | undefined, top: number): PromptLogprobOut {
  const logits = next?.logits ?? new Map<Token, number>();
  if (next?.token !== undefined && next.token !== null && !logits.has(next.token)) throw new Error("the engine's greedy token came back without its logit");
  let max = -Infinity;
  for (const logit of logits.values()) if (logit > max) max = logit;
  const logTotal = Math.log(next?.totalLogitWeight ?? 1);
  const ranked = [...logits.entries()].sort((a, b) => b[1] - a[1]);
  const out: Record<string, { logprob: number; rank: number; decoded_token: string }> = {};
  const add = (token: Token, logit: number, rank: number) => {
    out[String(token)] = { logprob: logit - max - logTotal, rank, decoded_token: model.detokenize([token], true) };
  };
  const actualRank = ranked.findIndex(([token]) => token === actual);
  add(actual, logits.get(actual) ?? max, actualRank >= 0 && actualRank < Math.max(1, top) ? actualRank + 1 : Math.max(1, top) + 1);
  ranked.slice(0, top).forEach(([token, logit], rank) => add(token, logit, rank + 1));
  return out;
}
