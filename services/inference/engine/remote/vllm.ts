// vLLM as a remote engine (0.10.2 or later: `return_token_ids`). Requests go to its OpenAI
// /v1/completions with the prompt as token ids (rendered here) and vLLM's own sampling fields,
// which cover nearly the whole request surface; the output's token ids come from `token_ids`,
// log-probabilities from the legacy `logprobs` object. Adapters (`--enable-lora`, with
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True on the server): the checkpoint's PEFT directory is put
// where the replica reads it (adapter-delivery.ts) and loaded with POST /v1/load_lora_adapter
// under the adapter's key, which requests then name as their model; past `maxAdapters` per replica
// the least recently used one not in use is unloaded (/v1/unload_lora_adapter).
import { badRequest } from "../../../core/errors.js";
import type { GenerateRequest, TokenLogprobOut } from "../protocol.js";
import type { AdapterRef, Backend, ChoiceCall, ChoiceEnd, Piece } from "./backend.js";
import type { RemoteEngineSettings } from "../../../core/engines-config.js";
import { deliverAdapter } from "./adapter-delivery.js";
import { callJson, errorMessage, readText, ReplicaAnswered, send, serverSentEvents } from "./http.js";
import type { Replica } from "./replica.js";

interface ModelList {
  data?: { id?: string; root?: string; parent?: string | null; max_model_len?: number }[];
}

interface CompletionChunk {
  choices?: {
    index?: number;
    text?: string;
    token_ids?: number[] | null;
    finish_reason?: string | null;
    stop_reason?: number | string | null;
    logprobs?: { tokens?: string[]; token_logprobs?: (number | null)[]; top_logprobs?: (Record<string, number> | null)[] } | null;
  }[];
  usage?: { prompt_tokens_details?: { cached_tokens?: number } | null } | null;
}

export class VllmBackend implements Backend {
  readonly kind = "vllm";
  readonly stopsOnStopTokenIds = true;
  /** Requests in flight per replica and adapter: an adapter in use is never unloaded. */
  private readonly using = new Map<Replica, Map<string, number>>();
  private readonly loadingOn = new Map<Replica, Map<string, Promise<void>>>();
  private readonly names = new Map<Replica, Promise<string>>();

  constructor(private readonly settings: RemoteEngineSettings) {}

  refuseUnsupported(request: GenerateRequest): void {
    // prompt_logprobs comes back only with the whole response (stream: false); this engine streams.
    if (request.promptLogprobs !== null) throw badRequest(`prompt_logprobs: not supported by the vLLM replicas serving ${request.base.name} through this service`);
    // This service asks a replica for one choice at a time, and beams are not independent choices.
    if (request.beamSearch) throw badRequest(`use_beam_search: not supported by the vLLM replicas serving ${request.base.name} through this service; the embedded engine runs it`);
  }

  async healthy(replica: Replica): Promise<boolean> {
    const response = await send(`${replica.url}/health`, { method: "GET" }, this.options());
    await readText(replica.url, response);
    if (!response.ok) return false;
    // The adapters it has now: a restarted replica has lost those this service loaded.
    const listedAt = performance.now();
    const list = (await callJson(`${replica.url}/v1/models`, { method: "GET" }, this.options())) as ModelList | null;
    replica.syncAdapters(new Map((list?.data ?? []).filter((model) => model.parent && model.id).map((model) => [model.id as string, model.id as string])), listedAt);
    return true;
  }

  async contextSize(replica: Replica): Promise<number> {
    const name = await this.baseName(replica);
    const list = (await callJson(`${replica.url}/v1/models`, { method: "GET" }, this.options())) as ModelList | null;
    const size = list?.data?.find((model) => model.id === name)?.max_model_len;
    if (typeof size !== "number" || size <= 0) throw new Error(`${replica.url}/v1/models gives no max_model_len for ${name}`);
    return size;
  }

  holds(replica: Replica, adapter: AdapterRef): boolean {
    return replica.adapters.has(adapter.key);
  }

  async prepare(replica: Replica, adapter: AdapterRef): Promise<void> {
    const loading = this.loadingOn.get(replica) ?? new Map<string, Promise<void>>();
    this.loadingOn.set(replica, loading);
    let pending = loading.get(adapter.key);
    if (!pending) {
      pending = this.load(replica, adapter).finally(() => loading.delete(adapter.key));
      loading.set(adapter.key, pending);
    }
    await pending;
  }

  private async load(replica: Replica, adapter: AdapterRef): Promise<void> {
    const path = await deliverAdapter(this.settings, adapter, "peft");
    try {
      await callJson(`${replica.url}/v1/load_lora_adapter`, { method: "POST", body: { lora_name: adapter.key, lora_path: path } }, this.options());
    } catch (error) {
      // Loaded before (by an earlier run of this service, say): as good as loaded now.
      if (!(error instanceof ReplicaAnswered && /already been loaded/i.test(error.message))) throw error;
    }
    replica.markLoaded(adapter.key, adapter.key);
    await this.unloadBeyondLimit(replica, adapter.key);
  }

  /** Least recently used first, never `keep` (about to be used) nor one in use; what is busy now goes later. */
  private async unloadBeyondLimit(replica: Replica, keep: string | null): Promise<void> {
    const inUse = this.using.get(replica);
    for (const key of [...replica.adapters.keys()]) {
      if (replica.adapters.size <= this.settings.maxAdapters) return;
      if (key === keep || (inUse?.get(key) ?? 0) > 0) continue;
      replica.adapters.delete(key);
      await callJson(`${replica.url}/v1/unload_lora_adapter`, { method: "POST", body: { lora_name: key } }, this.options()).catch(() => undefined);
    }
  }

  async *generate(replica: Replica, adapter: AdapterRef | null, call: ChoiceCall, signal: AbortSignal): AsyncGenerator<Piece, ChoiceEnd> {
    const { request } = call;
    const body = {
      model: adapter ? adapter.key : await this.baseName(replica),
      prompt: call.promptTokenIds,
      max_tokens: call.maxTokens,
      stream: true,
      stream_options: { include_usage: true },
      return_token_ids: true,
      temperature: request.sampling.temperature,
      ...(request.sampling.topP !== null ? { top_p: request.sampling.topP } : {}),
      ...(request.sampling.topK !== null ? { top_k: request.sampling.topK } : {}),
      ...(request.sampling.minP !== null ? { min_p: request.sampling.minP } : {}),
      ...(request.sampling.repetitionPenalty !== null ? { repetition_penalty: request.sampling.repetitionPenalty } : {}),
      presence_penalty: request.sampling.presencePenalty,
      frequency_penalty: request.sampling.frequencyPenalty,
      ...(call.seed !== null ? { seed: call.seed } : {}),
      ...(Object.keys(request.logitBias).length > 0 ? { logit_bias: request.logitBias } : {}),
      ...(request.badWords.length > 0 ? { bad_words: request.badWords } : {}),
      ...(request.allowedTokenIds !== null ? { allowed_token_ids: request.allowedTokenIds } : {}),
      // Stop strings are applied by this service (choice-output.ts); token ids here too, for min_tokens.
      ...(request.stopTokenIds.length > 0 ? { stop_token_ids: request.stopTokenIds } : {}),
      min_tokens: request.minTokens,
      ignore_eos: request.ignoreEos,
      skip_special_tokens: request.skipSpecialTokens,
      spaces_between_special_tokens: request.spacesBetweenSpecialTokens,
      ...(request.logprobs ? { logprobs: request.topLogprobs } : {}),
      // Log-probabilities' tokens as `token_id:{id}`, as the embedded engine writes them.
      ...(request.returnTokensAsTokenIds ? { return_tokens_as_token_ids: true } : {}),
      ...(request.grammar !== null ? { structured_outputs: { grammar: request.grammar } } : {}),
      ...(request.priority !== 0 ? { priority: request.priority } : {}),
      ...(request.cacheSalt !== null ? { cache_salt: request.cacheSalt } : {}),
    };
    const counts = this.using.get(replica) ?? new Map<string, number>();
    this.using.set(replica, counts);
    const key = adapter?.key ?? "";
    counts.set(key, (counts.get(key) ?? 0) + 1);
    try {
      const response = await send(`${replica.url}/v1/completions`, { method: "POST", body }, this.options(signal));
      if (!response.ok) throw new ReplicaAnswered(response.status, errorMessage(await readText(replica.url, response), response.status));
      let end: Omit<ChoiceEnd, "cachedTokens"> | null = null;
      let cachedTokens = 0;
      for await (const event of serverSentEvents(replica.url, response)) {
        const chunk = event as CompletionChunk;
        const cached = chunk.usage?.prompt_tokens_details?.cached_tokens;
        if (typeof cached === "number") cachedTokens = cached;
        for (const choice of chunk.choices ?? []) {
          const tokenIds = choice.token_ids ?? [];
          if (tokenIds.length > 0 || choice.text) yield { tokenIds, text: choice.text ?? "", logprobs: request.logprobs ? logprobsOf(choice.logprobs, request.topLogprobs) : [] };
          if (choice.finish_reason) end = { finishReason: choice.finish_reason === "length" ? "length" : "stop", stopReason: choice.stop_reason ?? null };
        }
      }
      if (!end) throw new ReplicaAnswered(502, `${replica.url} ended the stream without a finish_reason`);
      return { ...end, cachedTokens };
    } finally {
      counts.set(key, (counts.get(key) ?? 1) - 1);
      if (replica.adapters.size > this.settings.maxAdapters) void this.unloadBeyondLimit(replica, null).catch(() => undefined);
    }
  }

  /** The base model's name on the replica: configured, else the root model it lists. */
  private baseName(replica: Replica): Promise<string> {
    if (this.settings.servedModelName) return Promise.resolve(this.settings.servedModelName);
    let name = this.names.get(replica);
    if (!name) {
      name = (async () => {
        const list = (await callJson(`${replica.url}/v1/models`, { method: "GET" }, this.options())) as ModelList | null;
        const root = list?.data?.find((model) => !model.parent)?.id;
        if (!root) throw new Error(`${replica.url}/v1/models lists no base model`);
        return root;
      })();
      this.names.set(replica, name);
      name.catch(() => this.names.delete(replica));
    }
    return name;
  }

  private options(signal?: AbortSignal) {
    return { apiKey: this.settings.apiKey, timeoutMs: this.settings.connectTimeoutMs, ...(signal ? { signal } : {}) };
  }
}

/** vLLM's legacy completion logprobs -> the engine's per-token form (bytes from the token's text). */
function logprobsOf(logprobs: NonNullable<NonNullable<CompletionChunk["choices"]>[number]["logprobs"]> | null | undefined, top: number): TokenLogprobOut[] {
  if (!logprobs?.tokens) return [];
  return logprobs.tokens.map((token, i) => ({
    token,
    logprob: logprobs.token_logprobs?.[i] ?? -9999,
    bytes: [...Buffer.from(token, "utf8")],
    top_logprobs: Object.entries(logprobs.top_logprobs?.[i] ?? {})
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([alt, logprob]) => ({ token: alt, logprob, bytes: [...Buffer.from(alt, "utf8")] })),
  }));
}
