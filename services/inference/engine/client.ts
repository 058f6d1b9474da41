// The gateway's side of the engine: forks the engine child process, sends it requests and turns
// its messages into a stream per request. If the child dies (a native abort in llama.cpp, say),
// requests in flight fail with 503 and the next request starts a new child. A model on which the
// child dies of a native crash (crash-guard.ts) twice in a row is not run into the same crash
// again: the engine moves to node-llama-cpp's prebuilt binary where that one passed its check,
// else the model's requests are refused with the cause while other models are served.
import { fork, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { niceCommand } from "../../core/child-process.js";
import { ApiError, badRequest, notFound, overloaded, unavailable } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import { instruments } from "../../core/metrics/index.js";
import { CrashGuard } from "./crash-guard.js";
import type { EngineEvent, InferenceEngine } from "./inference-engine.js";
import { NOTHING_LEFT_TO_SAMPLE, type BaseModelRef, type EngineSettings, type PoolUsage, type EngineToGateway, type GatewayToEngine, type GenerateRequest, type RenderedPrompt, type TokenizerAnswer, type TokenizerOp } from "./protocol.js";

interface Inflight {
  /** The base model it runs on: a crash counts against every base model in flight. */
  base: string;
  push(event: EngineEvent): void;
  fail(error: ApiError): void;
  /** Grammar plus banned tokens: the one combination known to abort llama.cpp when unsatisfiable. */
  conflicting: boolean;
}

export class EngineClient implements InferenceEngine {
  private child: ChildProcess | undefined;
  private ready: Promise<void> | undefined;
  private readonly inflight = new Map<string, Inflight>();
  /** Pending describes: each resolves with the model's length, or null when there is no answer. */
  private readonly describing = new Map<string, { base: string; answer(maxModelLen: number | null): void }>();
  /** Pending questions answered by one message or a `failed` one: renders (prompts of remote engines) and tokenizer calls. */
  private readonly asking = new Map<string, { base: string; resolve(answer: unknown): void; reject(error: ApiError): void }>();
  private stopping = false;
  private readonly crashes: CrashGuard;
  /** Pending usage questions (/metrics). */
  private readonly usageAsked = new Map<string, (pools: PoolUsage[]) => void>();

  constructor(
    private readonly settings: EngineSettings,
    private readonly log: Logger,
  ) {
    this.crashes = new CrashGuard(settings.binary, log);
  }

  /** The events of one generation, ending after `done`; errors are thrown as ApiError. */
  async *generate(request: Omit<GenerateRequest, "id">, signal: AbortSignal): AsyncGenerator<EngineEvent> {
    const refusal = this.crashes.refusal(request.base.name);
    if (refusal) throw refusal;
    const id = randomUUID();
    const buffer: EngineEvent[] = [];
    let failure: ApiError | undefined;
    let wake: (() => void) | undefined;
    this.inflight.set(id, {
      base: request.base.name,
      push: (event) => (buffer.push(event), wake?.()),
      fail: (error) => ((failure = error), wake?.()),
      conflicting: request.grammar !== null && (Object.values(request.logitBias).some((bias) => bias <= -100) || request.badWords.length > 0 || request.allowedTokenIds !== null),
    });
    const onAbort = () => this.send({ type: "cancel", id });
    signal.addEventListener("abort", onAbort);
    try {
      await this.start();
      this.send({ type: "generate", request: { ...request, id } });
      for (;;) {
        while (buffer.length > 0) {
          const event = buffer.shift() as EngineEvent;
          if (event.type === "done") this.crashes.succeeded(request.base.name);
          yield event;
          if (event.type === "done") return;
        }
        if (failure) throw failure;
        if (signal.aborted) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      if (!signal.aborted && this.inflight.has(id) && !buffer.some((e) => e.type === "done")) this.send({ type: "cancel", id });
      this.inflight.delete(id);
    }
  }

  /**
   * The longest prompt plus completion a request on this base model may have (its context per
   * sequence, as generation enforces it); null when the model's file is not here yet (an hf: model
   * not downloaded: describing never downloads) or cannot be read. Never rejects: model listings
   * must not fail because one model cannot be described.
   */
  async describeModel(base: BaseModelRef): Promise<{ maxModelLen: number | null }> {
    const id = randomUUID();
    try {
      await this.start();
      const answer = new Promise<number | null>((resolve) => this.describing.set(id, { base: base.name, answer: resolve }));
      if (!this.send({ type: "describe", id, base })) return { maxModelLen: null };
      return { maxModelLen: await answer };
    } catch (error) {
      this.log.warn("could not describe base model", { model: base.name, error: error instanceof Error ? error.message : String(error) });
      return { maxModelLen: null };
    } finally {
      this.describing.delete(id);
    }
  }

  /** A request's prompt tokens as this base model's tokenizer and template make them (engine/remote). */
  async render(request: Omit<GenerateRequest, "id">, contextSize: number): Promise<RenderedPrompt> {
    const refusal = this.crashes.refusal(request.base.name);
    if (refusal) throw refusal;
    return this.ask<RenderedPrompt>(request.base.name, (id) => ({ type: "render", request: { ...request, id }, contextSize }));
  }

  /** vLLM's tokenizer calls on this base model's vocabulary (loaded without its weights). */
  tokenizer(base: BaseModelRef, op: TokenizerOp): Promise<TokenizerAnswer> {
    return this.ask<TokenizerAnswer>(base.name, (id) => ({ type: "tokenizer", id, base, op }));
  }

  /** Sends the question `message(id)` and waits for its answer (the engine process answers each once). */
  private async ask<Answer>(base: string, message: (id: string) => GatewayToEngine): Promise<Answer> {
    const id = randomUUID();
    try {
      await this.start();
      const answer = new Promise<Answer>((resolve, reject) => this.asking.set(id, { base, resolve: resolve as (answer: unknown) => void, reject }));
      if (!this.send(message(id))) throw unavailable("the inference engine stopped unexpectedly; retry the request");
      return await answer;
    } finally {
      this.asking.delete(id);
    }
  }

  /**
   * The engine process's loaded contexts (/metrics): nothing when it is not running (it starts on
   * the next request, not for a scrape) or does not answer within a second.
   */
  async usage(): Promise<{ running: boolean; refusedModels: number; pools: PoolUsage[] }> {
    const refusedModels = this.crashes.refusedCount();
    if (!this.child?.connected) return { running: false, refusedModels, pools: [] };
    const id = randomUUID();
    try {
      const pools = new Promise<PoolUsage[]>((resolve) => {
        this.usageAsked.set(id, resolve);
        setTimeout(() => resolve([]), 1_000).unref();
      });
      if (!this.send({ type: "usage", id })) return { running: false, refusedModels, pools: [] };
      return { running: true, refusedModels, pools: await pools };
    } finally {
      this.usageAsked.delete(id);
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.disconnect?.();
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }

  private start(): Promise<void> {
    if (this.ready) return this.ready;
    const entry = fileURLToPath(new URL("./llama/process.ts", import.meta.url));
    const settings: EngineSettings = { ...this.settings, binary: this.crashes.binary };
    // Under `nice` where one is found: the gateway, which answers every tenant, gets the CPU first.
    const nice = (settings.nice ?? 0) > 0 ? niceCommand() : null;
    const child = fork(entry, [], {
      ...(nice ? { execPath: nice, execArgv: ["-n", String(settings.nice), process.execPath, "--import", "tsx"] } : { execArgv: ["--import", "tsx"] }),
      env: { ...process.env, UV_THREADPOOL_SIZE: "1", SRL_ENGINE_SETTINGS: JSON.stringify(settings) },
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.child = child;
    this.ready = new Promise<void>((resolve, reject) => {
      child.once("error", reject);
      const receive = (message: EngineToGateway) => {
        if (message.type === "ready") return resolve();
        if (message.type === "usage") return this.usageAsked.get(message.id)?.(message.pools);
        if (message.type === "described") {
          if (message.error !== null) this.log.warn("could not describe base model", { error: message.error });
          return this.describing.get(message.id)?.answer(message.maxModelLen);
        }
        if (message.type === "rendered") return this.asking.get(message.id)?.resolve(message.prompt);
        if (message.type === "tokenizerAnswer") return this.asking.get(message.id)?.resolve(message.answer);
        const asked = this.asking.get(message.id);
        if (asked && message.type === "failed") return asked.reject(engineError(message.kind, message.message));
        const request = this.inflight.get(message.id);
        if (!request) return;
        if (message.type === "failed") request.fail(engineError(message.kind, message.message));
        else request.push(message);
      };
      child.on("message", (batch: EngineToGateway[]) => batch.forEach(receive));
      child.once("exit", (code, signal) => {
        this.child = undefined;
        this.ready = undefined;
        reject(unavailable("the inference engine did not start"));
        const working = [...this.inflight.values(), ...this.describing.values(), ...this.asking.values()].map((work) => work.base);
        // Counted before anything is answered, so a request that retries at once sees the verdict.
        const crashErrors = this.stopping ? new Map<string, ApiError>() : this.crashes.crashed(signal, working);
        const lost = (base: string) => crashErrors.get(base) ?? unavailable("the inference engine stopped unexpectedly; retry the request");
        for (const describing of this.describing.values()) describing.answer(null);
        for (const answer of this.usageAsked.values()) answer([]);
        for (const asked of this.asking.values()) asked.reject(lost(asked.base));
        if (this.stopping) return;
        instruments.engineExits.inc({ reason: signal ?? `exit code ${code ?? "unknown"}` });
        this.log.error("inference engine exited", { code, signal, inflight: this.inflight.size });
        // llama.cpp aborts when a grammar and banned tokens leave nothing to sample. The engine
        // checks for that before each token (grammar-guard.ts); should it still happen, such a
        // request gets a 400 (retrying cannot help), everyone else in flight a 503.
        for (const request of this.inflight.values()) {
          request.fail(request.conflicting ? badRequest(NOTHING_LEFT_TO_SAMPLE) : lost(request.base));
        }
      });
    });
    instruments.engineStarts.inc();
    this.log.info("inference engine starting", { pid: child.pid, threads: this.settings.threads || "per model" });
    return this.ready;
  }

  /** False when the engine is gone (the message is dropped). */
  private send(message: GatewayToEngine): boolean {
    if (!this.child?.connected) return false;
    this.child.send(message);
    return true;
  }
}

function engineError(kind: "bad_request" | "overloaded" | "not_found" | "unavailable" | "internal", message: string): ApiError {
  switch (kind) {
    case "bad_request":
      return badRequest(message);
    case "overloaded":
      return overloaded(message);
    case "not_found":
      return notFound(message);
    case "unavailable":
      return unavailable(message);
    default:
      return new ApiError("internal", message);
  }
}
