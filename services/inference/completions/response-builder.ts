// Engine events of a legacy completion's prompts -> `text_completion` objects: one whole Completion,
// or stream chunks (each choice's echo first, then its deltas, finish_reason on its last chunk,
// usage in a final chunk without choices when asked). Log-probabilities take the legacy shape:
// `tokens`, `token_logprobs`, `top_logprobs` (the chosen token and the k most likely, by text) and
// `text_offset` into the choice's text.
import { randomUUID } from "node:crypto";
import { fromJson, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema, type ListValue } from "@bufbuild/protobuf/wkt";
import type { CompletionChoiceSchema, CompletionLogprobsSchema, CompletionSchema } from "../../../gen/srl/v1/inference_pb.js";
import type { EngineToGateway, PromptLogprobOut, TokenLogprobOut } from "../engine/protocol.js";
import { stopReasonValue, usageMessage } from "../generation/response-fields.js";

export type PromptEvent = Exclude<EngineToGateway, { type: "ready" } | { type: "failed" }> & { prompt: number };

export interface CompletionResponseOptions {
  id: string | undefined;
  model: string;
  /** Which weights answer (generation/response-fields.ts). */
  systemFingerprint: string;
  n: number;
  echo: boolean;
  /** Alternatives per token; null when no log-probabilities were asked for. */
  logprobs: number | null;
  /** Whether the client asked for `prompt_logprobs` itself (echo's pass is internal otherwise). */
  promptLogprobs: boolean;
  returnTokenIds: boolean;
  tokensAsIds: boolean;
  includeUsage: boolean;
}

type Choice = MessageInitShape<typeof CompletionChoiceSchema>;
type Logprobs = MessageInitShape<typeof CompletionLogprobsSchema>;

/** One choice's legacy log-probabilities as they grow; offsets count characters of the choice's text. */
class ChoiceLogprobs {
  private offset = 0;
  readonly value = { tokens: [] as string[], tokenLogprobs: [] as JsonValue[], topLogprobs: [] as JsonValue[], textOffset: [] as number[] };

  add(token: string, logprob: number | null, top: JsonObject | null): void {
    this.value.tokens.push(token);
    this.value.tokenLogprobs.push(logprob);
    this.value.topLogprobs.push(top);
    this.value.textOffset.push(this.offset);
    this.offset += token.length;
  }

  /** Entries added since `from`, as the message. */
  slice(from: number): Logprobs {
    const { tokens, tokenLogprobs, topLogprobs, textOffset } = this.value;
    return {
      tokens: tokens.slice(from),
      tokenLogprobs: tokenLogprobs.slice(from).map((v) => fromJson(ValueSchema, v)),
      topLogprobs: topLogprobs.slice(from).map((v) => fromJson(ValueSchema, v)),
      textOffset: textOffset.slice(from),
    };
  }

  get length(): number {
    return this.value.tokens.length;
  }
}

/** The echoed prompt's tokens: log-probabilities from the engine's prompt pass (null for the first token). */
function addPromptTokens(into: ChoiceLogprobs, started: Extract<PromptEvent, { type: "started" }>, options: CompletionResponseOptions): void {
  const texts = started.promptTokenTexts ?? [];
  started.promptTokenIds.forEach((id, index) => {
    const token = options.tokensAsIds ? `token_id:${id}` : (texts[index] ?? "");
    const entry: PromptLogprobOut = started.promptLogprobs?.[index] ?? null;
    if (!entry) return into.add(token, null, null);
    // vLLM's order: the prompt's own token first, then the top `logprobs` by rank.
    const own = entry[String(id)];
    const top: JsonObject = {};
    if (own) top[options.tokensAsIds ? `token_id:${id}` : own.decoded_token] = own.logprob;
    const ranked = Object.entries(entry).filter(([tokenId, item]) => Number(tokenId) !== id && item.rank <= (options.logprobs ?? 0)).sort((a, b) => a[1].rank - b[1].rank);
    for (const [tokenId, item] of ranked) top[options.tokensAsIds ? `token_id:${tokenId}` : item.decoded_token] ??= item.logprob;
    into.add(token, own?.logprob ?? null, top);
  });
}

function addGenerated(into: ChoiceLogprobs, items: TokenLogprobOut[]): void {
  for (const item of items) {
    // vLLM's order: the sampled token first, then the top alternatives.
    const top: JsonObject = { [item.token]: item.logprob };
    for (const alternative of item.top_logprobs) top[alternative.token] ??= alternative.logprob;
    into.add(item.token, item.logprob, top);
  }
}

export function completionId(requestId: string | undefined): string {
  return requestId ?? `cmpl-${randomUUID().replace(/-/g, "")}`;
}

interface ChoiceState {
  text: string;
  tokenIds: number[];
  logprobs: ChoiceLogprobs;
  finish: string;
  stop: number | string | null;
}

/** Collects every prompt's choices into one Completion. */
export async function buildCompletion(events: AsyncIterable<PromptEvent>, prompts: number, options: CompletionResponseOptions): Promise<MessageInitShape<typeof CompletionSchema>> {
  const choices: ChoiceState[] = Array.from({ length: prompts * options.n }, () => ({ text: "", tokenIds: [], logprobs: new ChoiceLogprobs(), finish: "length", stop: null }));
  const started = new Map<number, Extract<PromptEvent, { type: "started" }>>();
  const usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  for await (const event of events) {
    const base = event.prompt * options.n;
    if (event.type === "started") {
      started.set(event.prompt, event);
      for (let c = 0; c < options.n; c++) {
        const choice = choices[base + c] as ChoiceState;
        if (options.echo) choice.text = event.echoText ?? "";
        if (options.echo && options.logprobs !== null) addPromptTokens(choice.logprobs, event, options);
      }
    } else if (event.type === "delta") {
      const choice = choices[base + event.choice];
      if (!choice) continue;
      choice.text += event.text;
      choice.tokenIds.push(...event.tokenIds);
      addGenerated(choice.logprobs, event.logprobs);
    } else if (event.type === "finished") {
      const choice = choices[base + event.choice];
      if (choice) [choice.finish, choice.stop] = [event.finishReason, event.stopReason];
    } else if (event.type === "done") addUsage(usage, event.usage);
  }
  return {
    id: completionId(options.id),
    object: "text_completion",
    created: BigInt(Math.floor(Date.now() / 1000)),
    model: options.model,
    systemFingerprint: options.systemFingerprint,
    choices: choices.map((choice, index): Choice => {
      const prompt = started.get(Math.floor(index / options.n));
      return {
        index,
        text: choice.text,
        logprobs: options.logprobs !== null ? choice.logprobs.slice(0) : undefined,
        finishReason: choice.finish,
        stopReason: stopReasonValue(choice.stop),
        ...promptExtras(prompt, options),
        tokenIds: options.returnTokenIds ? choice.tokenIds : [],
      };
    }),
    usage: usageMessage(usage),
  };
}

/** Turns the prompts' engine events into stream chunks, in the order they arrive. */
export async function* streamCompletionChunks(events: AsyncIterable<PromptEvent>, prompts: number, options: CompletionResponseOptions): AsyncGenerator<MessageInitShape<typeof CompletionSchema>> {
  const id = completionId(options.id);
  const created = BigInt(Math.floor(Date.now() / 1000));
  const logprobs = Array.from({ length: prompts * options.n }, () => new ChoiceLogprobs());
  const usage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
  const chunk = (choice: Choice) => ({ id, object: "text_completion", created, model: options.model, systemFingerprint: options.systemFingerprint, choices: [choice] });
  for await (const event of events) {
    const base = event.prompt * options.n;
    if (event.type === "started") {
      const extras = promptExtras(event, options);
      if (!options.echo && Object.keys(extras).length === 0) continue;
      for (let c = 0; c < options.n; c++) {
        const into = logprobs[base + c] as ChoiceLogprobs;
        if (options.echo && options.logprobs !== null) addPromptTokens(into, event, options);
        yield chunk({ index: base + c, text: options.echo ? (event.echoText ?? "") : "", logprobs: options.logprobs !== null && options.echo ? into.slice(0) : undefined, ...extras });
      }
    } else if (event.type === "delta") {
      const into = logprobs[base + event.choice] as ChoiceLogprobs;
      const from = into.length;
      addGenerated(into, event.logprobs);
      yield chunk({ index: base + event.choice, text: event.text, logprobs: options.logprobs !== null ? into.slice(from) : undefined, tokenIds: options.returnTokenIds ? event.tokenIds : [] });
    } else if (event.type === "finished") {
      yield chunk({ index: base + event.choice, text: "", finishReason: event.finishReason, stopReason: stopReasonValue(event.stopReason) });
    } else if (event.type === "done") addUsage(usage, event.usage);
  }
  if (options.includeUsage) yield { id, object: "text_completion", created, model: options.model, systemFingerprint: options.systemFingerprint, choices: [], usage: usageMessage(usage) };
}

type UsageCounts = Extract<PromptEvent, { type: "done" }>["usage"];

/** Every prompt's tokens count once; its n choices share them. */
function addUsage(total: UsageCounts, prompt: UsageCounts): void {
  total.promptTokens += prompt.promptTokens;
  total.completionTokens += prompt.completionTokens;
  total.cachedTokens += prompt.cachedTokens;
}

function promptExtras(started: Extract<PromptEvent, { type: "started" }> | undefined, options: CompletionResponseOptions): { promptLogprobs?: ListValue; promptTokenIds?: number[] } {
  if (!started) return {};
  return {
    ...(options.promptLogprobs && started.promptLogprobs ? { promptLogprobs: fromJson(ListValueSchema, started.promptLogprobs as JsonValue[]) } : {}),
    ...(options.returnTokenIds ? { promptTokenIds: started.promptTokenIds } : {}),
  };
}
