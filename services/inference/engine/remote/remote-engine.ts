// A base model served by remote replicas (llama-server or vLLM): the prompt is rendered and
// tokenized locally with the model's own tokenizer and template (so a replica sees exactly the
// tokens the embedded engine would), each choice runs on a replica the router picks, and a choice
// that fails before its first token moves to another replica. A choice that already sent tokens
// is never retried: it fails with a 503 and the client decides.
import { randomUUID } from "node:crypto";
import { ApiError, badRequest, notFound, overloaded, unavailable } from "../../../core/errors.js";
import type { Logger } from "../../../core/logger.js";
import type { EngineEvent, InferenceEngine } from "../inference-engine.js";
import type { BaseModelRef, GenerateRequest, RenderedPrompt } from "../protocol.js";
import type { AdapterRef, Backend } from "./backend.js";
import { ChoiceOutput } from "./choice-output.js";
import type { RemoteEngineSettings } from "../../../core/engines-config.js";
import { ReplicaAnswered, ReplicaUnreachable } from "./http.js";
import type { Replica } from "./replica.js";
import { Router } from "./router.js";
import { adapterRef } from "./adapter-delivery.js";

export interface PromptRenderer {
  render(request: Omit<GenerateRequest, "id">, contextSize: number): Promise<RenderedPrompt>;
}

/** Replicas this service runs itself (llama-server processes), if any. */
export interface ReplicaProcesses {
  /** Adapters a replica is being restarted to load. */
  loading(replica: Replica): ReadonlySet<string>;
  stop(): Promise<void>;
}

export class RemoteEngine implements InferenceEngine {
  private readonly router: Router;
  private readonly timer: NodeJS.Timeout;
  private context: Promise<number> | undefined;

  constructor(
    private readonly settings: RemoteEngineSettings,
    private readonly replicas: readonly Replica[],
    private readonly backend: Backend,
    private readonly renderer: PromptRenderer,
    private readonly log: Logger,
    private readonly processes: ReplicaProcesses | null,
  ) {
    this.router = new Router(settings.base, replicas, backend, (replica) => processes?.loading(replica) ?? new Set());
    this.timer = setInterval(() => void this.checkHealth(), settings.healthIntervalMs);
    this.timer.unref();
    void this.checkHealth();
  }

  /** Each replica's health and loaded adapters as routing last saw them (/metrics). */
  replicaStates(): { url: string; up: boolean; adapters: number }[] {
    return this.replicas.map((replica) => ({ url: replica.url, up: replica.up, adapters: replica.adapters.size }));
  }

  async *generate(plan: Omit<GenerateRequest, "id">, signal: AbortSignal): AsyncGenerator<EngineEvent> {
    const id = randomUUID();
    const request: GenerateRequest = { ...plan, id };
    this.backend.refuseUnsupported(request);
    const contextSize = await this.contextSize();
    const prompt = await this.renderer.render(plan, contextSize);
    const adapter = request.adapterPath ? adapterRef(request.adapterPath) : null;
    yield { type: "started", id, promptTokenIds: prompt.promptTokenIds, promptLogprobs: null, echoText: prompt.echoText, promptTokenTexts: prompt.promptTokenTexts };
    const maxTokens = Math.min(request.maxTokens ?? Number.MAX_SAFE_INTEGER, contextSize - prompt.promptTokenIds.length);
    if (request.maxTokens === 0) {
      for (let choice = 0; choice < request.n; choice++) yield { type: "finished", id, choice, finishReason: "length", stopReason: null };
      yield { type: "done", id, usage: { promptTokens: prompt.promptTokenIds.length, completionTokens: 0, cachedTokens: 0 } };
      return;
    }

    const cancel = new AbortController();
    const onAbort = () => cancel.abort();
    signal.addEventListener("abort", onAbort);
    const buffer: EngineEvent[] = [];
    let wake: (() => void) | undefined;
    const push = (event: EngineEvent) => {
      buffer.push(event);
      wake?.();
    };
    let failure: { error: unknown } | undefined;
    let running = request.n;
    let completionTokens = 0;
    let cachedTokens = 0;
    const seed = request.sampling.seed;
    const ends = new Set(prompt.endTokenIds);
    for (let choice = 0; choice < request.n; choice++) {
      const output = new ChoiceOutput(request, maxTokens, ends, this.backend.stopsOnStopTokenIds, {
        delta: (text, tokenIds, logprobs) => push({ type: "delta", id, choice, text, tokenIds, logprobs }),
        finished: (finishReason, stopReason) => push({ type: "finished", id, choice, finishReason, stopReason }),
      });
      const call = { request, promptTokenIds: prompt.promptTokenIds, maxTokens, seed: seed === null ? null : (seed + choice * 1_000_003) >>> 0 };
      void this.runChoice(adapter, call, output, cancel.signal)
        .then((cached) => {
          if (choice === 0) cachedTokens = cached;
          completionTokens += output.completionTokens;
        })
        .catch((error: unknown) => {
          failure ??= { error };
          cancel.abort();
        })
        .finally(() => {
          running--;
          wake?.();
        });
    }
    try {
      for (;;) {
        while (buffer.length > 0) yield buffer.shift() as EngineEvent;
        if (failure) throw failure.error;
        if (running === 0) break;
        if (signal.aborted) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      yield { type: "done", id, usage: { promptTokens: prompt.promptTokenIds.length, completionTokens, cachedTokens } };
    } finally {
      signal.removeEventListener("abort", onAbort);
      cancel.abort();
    }
  }

  /** One choice, moved to another replica while nothing of it was sent; resolves with the cached prompt tokens. */
  private async runChoice(adapter: AdapterRef | null, call: Parameters<Backend["generate"]>[2], output: ChoiceOutput, signal: AbortSignal): Promise<number> {
    const tried = new Set<Replica>();
    let reloaded = false;
    for (;;) {
      const replica = this.router.pick(adapter, tried);
      tried.add(replica);
      try {
        if (replica.restarting) await replica.restarting;
        if (adapter && !this.backend.holds(replica, adapter)) await this.backend.prepare(replica, adapter);
        if (adapter) replica.touch(adapter.key);
        replica.inflight++;
        try {
          const pieces = this.backend.generate(replica, adapter, call, signal);
          let draining = false;
          for (;;) {
            const next = await pieces.next();
            if (next.done) {
              output.close(next.value);
              return next.value.cachedTokens;
            }
            if (draining) continue;
            const verdict = output.push(next.value);
            if (verdict === "close") {
              await pieces.return(undefined as never);
              return 0;
            }
            draining = verdict === "drain";
          }
        } finally {
          replica.inflight--;
        }
      } catch (error) {
        if (signal.aborted) throw error;
        const message = error instanceof Error ? error.message : String(error);
        if (output.sent) {
          this.markDown(replica, message);
          throw unavailable(`replica ${replica.url} of ${this.settings.base} failed during the completion (${message}); it was not retried because part of it was already sent`);
        }
        // The replica no longer has the adapter (restarted since it loaded it): load it again, once.
        if (adapter && error instanceof ReplicaAnswered && error.status === 404 && !reloaded) {
          reloaded = true;
          replica.adapters.delete(adapter.key);
          tried.delete(replica);
          continue;
        }
        // The request itself is at fault (a 4xx other than overload): no other replica would do better.
        if (error instanceof ReplicaAnswered && error.status >= 400 && error.status < 500 && error.status !== 429 && error.status !== 408) throw replicaRefused(error);
        if (error instanceof ApiError) throw error;
        if (error instanceof ReplicaUnreachable || (error instanceof ReplicaAnswered && error.status >= 500)) this.markDown(replica, message);
        else replica.lastError = message;
        this.log.warn("replica failed before the first token; trying another", { base: this.settings.base, replica: replica.url, error: message });
      }
    }
  }

  async describeModel(_base: BaseModelRef): Promise<{ maxModelLen: number | null }> {
    try {
      return { maxModelLen: await this.contextSize() };
    } catch (error) {
      this.log.warn("could not describe remote base model", { base: this.settings.base, error: error instanceof Error ? error.message : String(error) });
      return { maxModelLen: null };
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.processes?.stop();
  }

  /** The replicas' context per request, read from the first that answers (and kept once known). */
  private contextSize(): Promise<number> {
    this.context ??= (async () => {
      const errors: string[] = [];
      // Replicas known to be down are skipped: a model listing must not wait on them.
      for (const replica of this.replicas.filter((r) => r.up || r.restarting)) {
        try {
          if (replica.restarting) await replica.restarting;
          return await this.backend.contextSize(replica);
        } catch (error) {
          errors.push(`${replica.url}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      throw unavailable(`no replica of ${this.settings.base} answered with its context size (${errors.join("; ")}); retry shortly`);
    })();
    this.context.catch(() => (this.context = undefined));
    return this.context;
  }

  private async checkHealth(): Promise<void> {
    await Promise.all(
      this.replicas.map(async (replica) => {
        if (replica.restarting) return;
        const up = await this.backend.healthy(replica).catch(() => false);
        if (replica.restarting) return;
        if (up !== replica.up) this.log.info(up ? "replica is up" : "replica is down", { base: this.settings.base, replica: replica.url, ...(up ? {} : { error: replica.lastError }) });
        if (!up && replica.up) replica.lastError ||= "health check failed";
        if (up) replica.lastError = "";
        replica.up = up;
      }),
    );
  }

  private markDown(replica: Replica, why: string): void {
    if (replica.up) this.log.warn("replica is down", { base: this.settings.base, replica: replica.url, error: why });
    replica.up = false;
    replica.lastError = why;
  }
}

function replicaRefused(error: ReplicaAnswered): ApiError {
  if (error.status === 404) return notFound(error.message);
  if (error.status === 429) return overloaded(error.message);
  return badRequest(error.message);
}
