// Spec §2.1: one history -> token ids, trainable mask and sampler logprobs, by "template + sentinel
// splice": the history is rendered with each trainable turn's content replaced by a sentinel token,
// then each sentinel is replaced by the exact tokens the sampler produced. Everything the template
// adds (role headers, system/user/tool turns) stays as rendered; only sampled tokens train.
import type { JsonObject } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import type { HistoryItem, SampledToken } from "./messages.js";
import type { ParsedHistory } from "./trajectories.js";

export interface TokenizedHistory {
  tokens: number[];
  /** true where tokens[i] was sampled by the policy (or, in flag mode, is a dict assistant token). */
  assistantMask: boolean[];
  /** The sampler's log-probability of tokens[i]; null where there is none. */
  oldLogprobs: (number | null)[];
}

type Trainable = { item: HistoryItem; ids: number[] | null };

/** null when the history has no trainable turn. */
export function tokenizeHistory(tokenizer: ChatTokenizer, history: ParsedHistory, allowTrainingWithoutLogprobs: boolean): TokenizedHistory | null {
  const isTrainable = (item: HistoryItem) => (item.kind === "choice" ? item.sampled !== null : allowTrainingWithoutLogprobs && item.message.role === "assistant");
  // §2.1 step 2: cut after the last trainable turn (with the flag on, after the last Choice too).
  let last = -1;
  history.items.forEach((item, i) => {
    if (isTrainable(item) || (allowTrainingWithoutLogprobs && item.kind === "choice")) last = i;
  });
  const kept = history.items.slice(0, last + 1);
  if (!kept.some(isTrainable)) return null;

  // Step 3: messages() of the kept items; a trainable final Choice loses its tool_calls.
  const messages = kept.map((item, i) => {
    if (i === kept.length - 1 && item.kind === "choice" && item.sampled && "tool_calls" in item.message) {
      const { tool_calls: _dropped, ...rest } = item.message;
      return rest;
    }
    return item.message;
  });
  const trainables: Trainable[] = [];
  kept.forEach((item, i) => {
    if (!isTrainable(item)) return;
    if (item.kind === "message" && (typeof item.message.content !== "string" || hasToolCalls(item.message))) {
      throw new TrainingInputError(`${history.where}.messages_and_choices[${i}]: an assistant message trained without logprobs needs string content and no tool_calls (tool calls ignored on this path)`);
    }
    trainables.push({ item, ids: item.kind === "choice" && item.sampled ? item.sampled.map((s) => sampledId(tokenizer, s, history.where)) : null });
  });

  // Step 6: the sentinel is the largest id absent from the plain rendering (and from what was sampled).
  const plain = tokenizer.tokenize(tokenizer.render(messages, history.tools, false));
  const sentinel = pickSentinel(tokenizer, new Set([...plain, ...trainables.flatMap((t) => t.ids ?? [])]));
  // Step 7: trainable turns become sentinel turns (keeping rendered tool_calls); the last stays open.
  const withSentinels = kept.map((item, i): JsonObject => {
    if (!isTrainable(item)) return messages[i]!;
    const toolCalls = messages[i]!.tool_calls;
    return { role: "assistant", content: sentinel.text, ...(toolCalls !== undefined ? { tool_calls: toolCalls } : {}) };
  });
  const tokens = tokenizer.tokenize(tokenizer.render(withSentinels, history.tools, false, { continueFinalMessage: true }));
  const found = tokens.filter((t) => t === sentinel.id).length;
  if (found !== trainables.length) {
    throw new TrainingInputError(`${history.where}: the chat template rendered ${found} of ${trainables.length} trainable assistant turns; it cannot be used for RL training`);
  }

  // Step 8: splice, left to right.
  const mask = tokens.map(() => false);
  const logprobs: (number | null)[] = tokens.map(() => null);
  let cursor = 0;
  for (const { item, ids } of trainables) {
    const p = tokens.indexOf(sentinel.id, cursor);
    if (ids === null) {
      const contentIds = tokenizer.tokenize(item.message.content as string, false);
      tokens.splice(p, 1, ...contentIds);
      mask.splice(p, 1, ...contentIds.map(() => true));
      logprobs.splice(p, 1, ...contentIds.map(() => null));
      cursor = p + contentIds.length;
      continue;
    }
    const sampled = (item as { sampled: SampledToken[] }).sampled;
    // Think fix-up: the template's injected "<think>…" prefix is overwritten by the sampled one.
    const start = ids.length > 0 && p >= 4 && sampledText(tokenizer, sampled[0]!, ids[0]!) === "<think>" && tokenizer.detokenize([tokens[p - 4]!]) === "<think>" ? p - 4 : p;
    tokens.splice(start, p - start + 1, ...ids);
    mask.splice(start, p - start + 1, ...ids.map(() => true));
    logprobs.splice(start, p - start + 1, ...sampled.map((s) => s.logprob));
    const end = start + ids.length;
    // End-token dedupe: a sampled end token replaces the template's own.
    if (ids.length > 0 && end < tokens.length && tokens[end] === ids[ids.length - 1]) {
      tokens.splice(end, 1);
      mask.splice(end, 1);
      logprobs.splice(end, 1);
    }
    cursor = end;
  }
  return { tokens, assistantMask: mask, oldLogprobs: logprobs };
}

function hasToolCalls(message: JsonObject): boolean {
  return Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
}

/** "token_id:<n>" exactly; otherwise the token's text (unknown -> EOS, as ART). */
export function sampledId(tokenizer: ChatTokenizer, sampled: SampledToken, where: string): number {
  const match = /^token_id:(\d+)$/.exec(sampled.token);
  if (match) {
    const id = Number(match[1]);
    if (id >= tokenizer.vocabSize) throw new TrainingInputError(`${where}: sampled token ${sampled.token} is outside the base model's vocabulary (${tokenizer.vocabSize} tokens)`);
    return id;
  }
  return tokenizer.tokenIdOfText(sampled.token) ?? tokenizer.eosToken;
}

function sampledText(tokenizer: ChatTokenizer, sampled: SampledToken, id: number): string {
  if (sampled.bytes) return Buffer.from(sampled.bytes).toString("utf8");
  return sampled.token.startsWith("token_id:") ? tokenizer.detokenize([id]) : sampled.token;
}

/**
 * The largest id not in `exclude` whose text tokenizes back to exactly itself (so it survives
 * rendering as one token; ART takes the largest absent id and assumes it does).
 */
function pickSentinel(tokenizer: ChatTokenizer, exclude: Set<number>): { id: number; text: string } {
  for (let id = tokenizer.vocabSize - 1; id >= 0; id--) {
    if (exclude.has(id)) continue;
    const text = tokenizer.detokenize([id]);
    const back = text ? tokenizer.tokenize(text) : [];
    if (back.length === 1 && back[0] === id) return { id, text };
  }
  throw new TrainingInputError("no sentinel token is available for this history");
}
