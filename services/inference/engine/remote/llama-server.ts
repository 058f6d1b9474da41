// llama.cpp's own server as a remote engine. Requests go to its native /completion endpoint with
// the prompt as token ids (rendered here), `return_tokens` for the ids and `grammar` (GBNF, as the
// embedded engine takes it). Adapters: llama-server
// opens LoRA files only at start (`--lora`), so a request picks among them with `lora: [{id,
// scale}]` after GET /lora-adapters; a replica this service runs is restarted with the adapter
// (processes.ts); one run by someone else serves the adapters it was started with.
import { badRequest, unavailable } from "../../../core/errors.js";
import type { GenerateRequest } from "../protocol.js";
import type { AdapterRef, Backend, ChoiceCall, ChoiceEnd, Piece } from "./backend.js";
import type { RemoteEngineSettings } from "../../../core/engines-config.js";
import { callJson, ReplicaAnswered, send, serverSentEvents, readText, errorMessage } from "./http.js";
import type { Replica } from "./replica.js";

/** Restarts a replica this service runs with an adapter loaded (null for replicas run elsewhere). */
export type AdapterLoader = (replica: Replica, adapter: AdapterRef) => Promise<void>;

interface CompletionChunk {
  content?: string;
  tokens_predicted?: number;
  tokens?: number[];
  stop?: boolean;
  stop_type?: string;
  timings?: { cache_n?: number };
}

export class LlamaServerBackend implements Backend {
  readonly kind = "llama-server";
  readonly stopsOnStopTokenIds = false;

  constructor(
    private readonly settings: RemoteEngineSettings,
    /** The replicas this service runs, by URL, and how to load an adapter into one. */
    private readonly managed: { has(replica: Replica): boolean; load: AdapterLoader } | null,
  ) {}

  refuseUnsupported(request: GenerateRequest): void {
    const refuse = (field: string) => {
      throw badRequest(`${field}: not supported by the llama-server replicas serving ${request.base.name}`);
    };
    if (request.minTokens > 0) refuse("min_tokens");
    if (request.badWords.length > 0) refuse("bad_words");
    if (request.allowedTokenIds !== null) refuse("allowed_token_ids");
    if (request.promptLogprobs !== null) refuse("prompt_logprobs");
    if (request.priority !== 0) refuse("priority");
    if (request.beamSearch) refuse("use_beam_search");
    // llama-server's stream leaves out every token that ends inside a multi-byte character (it
    // sends the character with the token that completes it): their ids and log-probabilities
    // never arrive, so these would come back with gaps.
    const gaps = "llama-server's stream does not report the tokens that end inside a multi-byte character, so per-token output would have gaps";
    if (request.logprobs) throw badRequest(`logprobs: not supported by the llama-server replicas serving ${request.base.name} (${gaps}); use vLLM replicas or the embedded engine`);
    if (request.returnTokenIds || request.returnTokensAsTokenIds) {
      throw badRequest(`${request.returnTokenIds ? "return_token_ids" : "return_tokens_as_token_ids"}: not supported by the llama-server replicas serving ${request.base.name} (${gaps}); use vLLM replicas or the embedded engine`);
    }
    // llama-server writes special tokens into the text only when started with --special.
    if (!request.skipSpecialTokens) refuse("skip_special_tokens=false");
  }

  async healthy(replica: Replica): Promise<boolean> {
    const response = await send(`${replica.url}/health`, { method: "GET" }, this.options());
    await readText(replica.url, response);
    // A replica run elsewhere may have been restarted, with other adapters or none.
    if (response.ok && !this.managed?.has(replica)) await this.readAdapters(replica);
    return response.ok;
  }

  async contextSize(replica: Replica): Promise<number> {
    const props = (await callJson(`${replica.url}/props`, { method: "GET" }, this.options())) as { default_generation_settings?: { n_ctx?: unknown } } | null;
    const size = props?.default_generation_settings?.n_ctx;
    if (typeof size !== "number" || size <= 0) throw new Error(`${replica.url}/props gives no context size`);
    return size;
  }

  holds(replica: Replica, adapter: AdapterRef): boolean {
    return replica.adapters.has(adapter.key);
  }

  async prepare(replica: Replica, adapter: AdapterRef): Promise<void> {
    if (this.managed?.has(replica)) return this.managed.load(replica, adapter);
    // A replica run elsewhere may have been restarted with more adapters since it was last asked.
    await this.readAdapters(replica);
    if (!replica.adapters.has(adapter.key)) {
      throw unavailable(
        `the adapter of this checkpoint (${adapter.key}) is not loaded on llama-server ${replica.url}; llama-server loads adapters only at start, so restart it with --lora <dir>/${adapter.key}/adapter.gguf (README: Remote engines) or let this service run the replicas (launch)`,
      );
    }
  }

  /** Which adapters the replica has, matched by their directory (named after the adapter). */
  async readAdapters(replica: Replica): Promise<void> {
    const listedAt = performance.now();
    const listed = (await callJson(`${replica.url}/lora-adapters`, { method: "GET" }, this.options())) as { id: number; path: string }[] | null;
    const seen = new Map<string, string>();
    for (const entry of listed ?? []) {
      const key = entry.path.split(/[\\/]/).at(-2);
      if (key) seen.set(key, String(entry.id));
    }
    replica.syncAdapters(seen, listedAt);
  }

  async *generate(replica: Replica, adapter: AdapterRef | null, call: ChoiceCall, signal: AbortSignal): AsyncGenerator<Piece, ChoiceEnd> {
    const { request } = call;
    const body = {
      prompt: call.promptTokenIds,
      n_predict: call.maxTokens,
      stream: true,
      return_tokens: true,
      // cache_salt partitions the prefix cache; a replica has no partitions, so a salted request reuses nothing.
      cache_prompt: request.cacheSalt === null,
      temperature: request.sampling.temperature,
      top_k: request.sampling.topK ?? 0,
      top_p: request.sampling.topP ?? 1,
      min_p: request.sampling.minP ?? 0,
      typical_p: 1,
      repeat_penalty: request.sampling.repetitionPenalty ?? 1,
      // The whole prompt and output, as vLLM counts repetitions.
      repeat_last_n: call.promptTokenIds.length + call.maxTokens,
      presence_penalty: request.sampling.presencePenalty,
      frequency_penalty: request.sampling.frequencyPenalty,
      ...(call.seed !== null ? { seed: call.seed } : {}),
      ignore_eos: request.ignoreEos,
      logit_bias: Object.entries(request.logitBias).map(([token, bias]) => [Number(token), bias <= -100 ? false : bias]),
      ...(request.grammar !== null ? { grammar: request.grammar } : {}),
      ...(replica.adapters.size > 0 ? { lora: this.loraSelection(replica, adapter) } : {}),
    };
    const response = await send(`${replica.url}/completion`, { method: "POST", body }, this.options(signal));
    if (!response.ok) throw new ReplicaAnswered(response.status, errorMessage(await readText(replica.url, response), response.status));
    let cachedTokens = 0;
    for await (const event of serverSentEvents(replica.url, response)) {
      const chunk = event as CompletionChunk;
      const tokenIds = chunk.tokens ?? [];
      if (tokenIds.length > 0 || chunk.content) yield { tokenIds, text: chunk.content ?? "", logprobs: [], ...(chunk.tokens_predicted !== undefined ? { generated: chunk.tokens_predicted } : {}) };
      if (chunk.stop) {
        cachedTokens = chunk.timings?.cache_n ?? 0;
        // "limit": n_predict or the slot's context is used up; "eos", or "none" when it stopped for
        // another reason of its own.
        return { finishReason: chunk.stop_type === "limit" ? "length" : "stop", stopReason: null, cachedTokens };
      }
    }
    throw new ReplicaAnswered(502, `${replica.url} ended the stream without its final message`);
  }

  /** Every adapter of the replica at scale 0 but the chosen one (an empty list would mean the global scales). */
  private loraSelection(replica: Replica, adapter: AdapterRef | null): { id: number; scale: number }[] {
    return [...replica.adapters].map(([key, id]) => ({ id: Number(id), scale: adapter !== null && key === adapter.key ? 1 : 0 }));
  }

  private options(signal?: AbortSignal) {
    return { apiKey: this.settings.apiKey, timeoutMs: this.settings.connectTimeoutMs, ...(signal ? { signal } : {}) };
  }
}
