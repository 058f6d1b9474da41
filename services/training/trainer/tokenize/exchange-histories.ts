// A trajectory's captured turns -> what the RL tokenizer trains, in one of two ways:
// - the inference server's own tokens (every output carries prompt and output ids, and always for
//   legacy completions, which have no chat template): histories grown over token ids, the
//   sampled output tokens trained once each; ART 0.5.23 trains exchanges only this way, and,
//   as ART, an output without log-probs fails unless allow_training_without_logprobs.
// - otherwise (ids not returned): their messages_and_choices equivalent, histories grown over
//   chat messages (request messages as context, each output a Choice with the response's
//   logprobs), each tokenized by the chat template like any messages_and_choices history.
import type { JsonObject } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import { isObject, parseItem, type HistoryItem } from "./messages.js";
import { sampledId, type TokenizedHistory } from "./rl-history.js";
import type { ParsedHistory } from "./trajectories.js";
import { growBranches } from "./exchange-branches.js";
import type { CapturedOutput, CapturedTurn, ExactTokens } from "./exchange-captured-turn.js";

export type ExchangeHistories = { kind: "tokens"; histories: (TokenizedHistory & { where: string })[] } | { kind: "template"; histories: ParsedHistory[] };

/** Token histories need the tokenizer only for legacy completions captured without ids. */
export function exchangeHistories(tokenizer: ChatTokenizer, turns: readonly CapturedTurn[], allowTrainingWithoutLogprobs: boolean, where: string): ExchangeHistories {
  const exact = turns.every((t) => t.kind === "completions" || t.outputs.every((o) => o.exact !== null));
  return exact ? { kind: "tokens", histories: tokenHistories(tokenizer, turns, allowTrainingWithoutLogprobs, where) } : { kind: "template", histories: messageHistories(turns, where) };
}

interface TokenSlot {
  id: number;
  trained: boolean;
  logprob: number | null;
}

function tokenHistories(tokenizer: ChatTokenizer, turns: readonly CapturedTurn[], allowTrainingWithoutLogprobs: boolean, where: string): (TokenizedHistory & { where: string })[] {
  const steps = turns.map((turn) => {
    const generations = turn.outputs.map((output) => ({ output, tokens: output.exact ?? resolveText(tokenizer, output) }));
    for (const { output, tokens } of generations) {
      if (!tokens.hasLogprobs && !allowTrainingWithoutLogprobs) throw new TrainingInputError(`${output.where}: the output has no logprobs to train with (set allow_training_without_logprobs to train it without)`);
    }
    // The turn's outputs share one prompt (ART: the first choice's prompt ids).
    const prompt = generations[0]!.tokens.promptIds.map((id): TokenSlot => ({ id, trained: false, logprob: null }));
    return { context: "", prompt, outputs: generations.map(({ tokens }) => tokens.outputIds.map((id, i): TokenSlot => ({ id, trained: true, logprob: tokens.logprobs[i] ?? null }))) };
  });
  const branches = growBranches(steps, (a, b) => a.id === b.id, (slot) => ({ ...slot, trained: false }));
  return branches
    .filter((branch) => branch.items.some((slot) => slot.trained))
    .map((branch, i) => ({
      tokens: branch.items.map((slot) => slot.id),
      assistantMask: branch.items.map((slot) => slot.trained),
      oldLogprobs: branch.items.map((slot) => (slot.trained ? slot.logprob : null)),
      where: `${where} history ${i}`,
    }));
}

/** A legacy completion without ids: the prompt as the endpoint tokenizes it, the output from its logprob tokens or text. */
function resolveText(tokenizer: ChatTokenizer, output: CapturedOutput): ExactTokens {
  const text = output.text;
  if (!text) throw new Error(`${output.where}: neither exact tokens nor text`);
  const promptIds = "ids" in text.prompt ? text.prompt.ids : tokenizer.promptTokens(text.prompt.text, text.prompt.addSpecialTokens);
  if ("sampled" in text.output) {
    const sampled = text.output.sampled;
    return { promptIds, outputIds: sampled.map((s) => sampledId(tokenizer, s, output.where)), logprobs: sampled.map((s) => s.logprob), hasLogprobs: true };
  }
  const outputIds = tokenizer.tokenize(text.output.text, false);
  return { promptIds, outputIds, logprobs: outputIds.map(() => null), hasLogprobs: false };
}

function messageHistories(turns: readonly CapturedTurn[], where: string): ParsedHistory[] {
  const toolsByContext = new Map<string, JsonObject[] | null>();
  const steps = turns.map((turn) => {
    const context = JSON.stringify(turn.tools ?? null);
    toolsByContext.set(context, turn.tools);
    const prompt = (turn.messages ?? []).map((message, i) => parseItem(message, `${turn.where}.request.messages[${i}]`));
    return { context, prompt, outputs: turn.outputs.map((output): HistoryItem[] => [output.choice]) };
  });
  const settle = (item: HistoryItem): HistoryItem => (item.kind === "choice" ? { kind: "message", message: item.message } : item);
  return growBranches(steps, (a, b) => messageKey(a) === messageKey(b), settle).map((branch, i) => ({ items: branch.items, tools: toolsByContext.get(branch.context) ?? null, where: `${where} history ${i}` }));
}

/**
 * What makes two chat messages the same turn (ART `_chat_message_key`, visible parts only): role,
 * text content (null = ""), tool calls, tool_call_id.
 */
function messageKey(item: HistoryItem): string {
  const m = item.message;
  const content = typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p) => (isObject(p) && typeof p.text === "string" ? p.text : "")).join("") : "";
  const calls = Array.isArray(m.tool_calls)
    ? m.tool_calls.map((c) => (isObject(c) && isObject(c.function) ? [c.id ?? null, c.function.name ?? null, c.function.arguments ?? null] : c))
    : [];
  return JSON.stringify([m.role ?? null, content, calls, m.tool_call_id ?? null]);
}
