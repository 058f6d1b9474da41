// The engine inside its child process: loads base models once, admits requests into free
// sequences per base model (entities taking turns, by priority first where the model is set up for
// it: engine/fair-queue.ts), refuses past the queue limits, and runs the n choices of a request in
// parallel sequences so llama.cpp batches them with everything else in flight.
import type { Llama, LlamaGrammar, LlamaModel, Token } from "node-llama-cpp";
import { describeBinary, loadLlama, logBinary } from "./binary.js";
import type { Logger } from "../../../core/logger.js";
import type { BaseModelRef, EngineSettings, EngineToGateway, GenerateRequest, PoolUsage, RenderedPrompt, TokenizerAnswer, TokenizerOp } from "../protocol.js";
import { ContextPools, type Lease } from "./context-pool.js";
import { ContextSizes } from "./context-size.js";
import { describeBaseModel } from "./describe.js";
import { EngineRequestError } from "./errors.js";
import { FairQueue, type FairWaiter } from "../fair-queue.js";
import { beamSearch } from "./beam-search.js";
import { generateChoice } from "./generate.js";
import { endOfGenerationTokens } from "./model-info.js";
import { modelPath } from "./model-source.js";
import { buildPrompt } from "./prompt.js";
import { promptLogprobs } from "./prompt-logprobs.js";
import { SamplingPlan } from "./sampling.js";
import { answerTokenizerOp } from "./tokenizer-ops.js";

type Emit = (message: EngineToGateway) => void;

/** Another entity that asked for a model within this long shares it (one sequence is kept for it). */
const SHARED_WINDOW_MS = 60_000;

interface Waiter extends FairWaiter {
  admit: () => Promise<boolean>;
  /** Refuses it: another entity needed its place. */
  displace: (error: EngineRequestError) => void;
}

export class LlamaEngine {
  private llama: Promise<Llama> | undefined;
  private readonly models = new Map<string, Promise<LlamaModel>>();
  private readonly pools: ContextPools;
  private readonly sizes: ContextSizes;
  private readonly queues = new Map<string, FairQueue<Waiter>>();
  /** Sequences in use per base model and entity (whose turn it is: the one with fewest). */
  private readonly running = new Map<string, Map<string, number>>();
  /** When each entity last asked for each base model (who shares it now). */
  private readonly lastSeen = new Map<string, Map<string, number>>();
  private arrivals = 0;

  constructor(
    private readonly settings: EngineSettings,
    private readonly log: Logger,
  ) {
    this.sizes = new ContextSizes(settings);
    this.pools = new ContextPools(settings, log, this.sizes);
  }

  async generate(request: GenerateRequest, signal: AbortSignal, emit: Emit): Promise<void> {
    if (request.n > this.settings.sequences) {
      throw new EngineRequestError("bad_request", `n=${request.n} is more than this deployment runs in parallel (ENGINE_SEQUENCES=${this.settings.sequences})`);
    }
    if (request.priority !== 0 && request.base.scheduling !== "priority") {
      throw new EngineRequestError("bad_request", `priority=${request.priority}: model ${request.base.name} is not served with priority scheduling, so priority must be 0`);
    }
    const model = await this.model(request.base.name, request.base.source);
    await this.injectFault(request.base.name);
    const contextSize = await this.sizes.of(request.base.name, model.fileInsights);
    const prompt = buildPrompt(model, request, contextSize);
    const grammar = request.grammar === null ? null : await this.grammar(request.grammar);
    const lease = await this.admit(request, model, prompt.tokens, signal);
    try {
      await lease.prepared;
      const logprobsOfPrompt = request.promptLogprobs !== null ? await promptLogprobs(model, lease.sequences[0]!.sequence, prompt.tokens, request.promptLogprobs) : null;
      // The prompt log-probabilities pass evaluates the whole prompt again: nothing came from the cache.
      const cached = request.promptLogprobs !== null ? 0 : Math.min(...lease.cached);
      const promptTokenTexts = request.rawPrompt && request.echo ? prompt.tokens.map((token) => model.detokenize([token], true)) : null;
      emit({ type: "started", id: request.id, promptTokenIds: prompt.tokens, promptLogprobs: logprobsOfPrompt, echoText: prompt.echoText, promptTokenTexts });
      const maxTokens = Math.min(request.maxTokens ?? Number.MAX_SAFE_INTEGER, contextSize - prompt.tokens.length);
      let completionTokens = 0;
      if (request.beamSearch && request.maxTokens !== 0) {
        await beamSearch({
          model,
          sequences: lease.sequences.map((pooled) => pooled.sequence),
          request,
          lengthPenalty: request.beamSearch.lengthPenalty,
          promptTokens: prompt.tokens,
          cachedTokens: request.promptLogprobs !== null ? prompt.tokens.length - 1 : (lease.cached[0] ?? 0),
          maxTokens,
          signal,
          events: {
            choice: (choice, out) => {
              completionTokens += out.tokenIds.length;
              if (out.text || out.tokenIds.length > 0 || out.logprobs.length > 0) emit({ type: "delta", id: request.id, choice, text: out.text, tokenIds: out.tokenIds, logprobs: out.logprobs });
              emit({ type: "finished", id: request.id, choice, finishReason: out.finishReason, stopReason: out.stopReason });
            },
          },
        });
        emit({ type: "done", id: request.id, usage: { promptTokens: prompt.tokens.length, completionTokens, cachedTokens: cached } });
        return;
      }
      const sampling = new SamplingPlan(model, request);
      await Promise.all(
        lease.sequences.map((pooled, choice) =>
          // max_tokens 0 (a legacy completion scoring its echoed prompt): nothing to generate.
          request.maxTokens === 0 ? emit({ type: "finished", id: request.id, choice, finishReason: "length", stopReason: null }) :
          generateChoice({
            model,
            sequence: pooled.sequence,
            request,
            sampling,
            promptTokens: prompt.tokens,
            cachedTokens: request.promptLogprobs !== null && choice === 0 ? prompt.tokens.length - 1 : (lease.cached[choice] ?? 0),
            choice,
            maxTokens,
            grammar,
            signal,
            events: {
              delta: (text, tokenIds, logprobs) => emit({ type: "delta", id: request.id, choice, text, tokenIds, logprobs }),
              finished: (finishReason, stopReason, count) => {
                completionTokens += count;
                emit({ type: "finished", id: request.id, choice, finishReason, stopReason });
              },
            },
          }),
        ),
      );
      emit({ type: "done", id: request.id, usage: { promptTokens: prompt.tokens.length, completionTokens, cachedTokens: cached } });
    } finally {
      this.pools.release(request.base.name, request.adapterPath, lease.sequences);
      this.countRunning(request, -lease.sequences.length);
      this.pump(request.base.name);
    }
  }

  /** The loaded contexts' sequences and KV cells (/metrics). */
  usage(): PoolUsage[] {
    return this.pools.usage();
  }

  /** The prompt of a request a remote engine generates: its base model's vocabulary only is loaded. */
  async render(request: GenerateRequest, contextSize: number): Promise<RenderedPrompt> {
    const model = await this.vocabulary(request.base.name, request.base.source);
    const prompt = buildPrompt(model, request, contextSize);
    const promptTokenTexts = request.rawPrompt && request.echo ? prompt.tokens.map((token) => model.detokenize([token], true)) : null;
    return { promptTokenIds: prompt.tokens, echoText: prompt.echoText, promptTokenTexts, endTokenIds: endOfGenerationTokens(model) };
  }

  /** vLLM's tokenizer calls, on the base model's vocabulary only (inference/tokenizer). */
  async tokenizer(base: BaseModelRef, op: TokenizerOp): Promise<TokenizerAnswer> {
    return answerTokenizerOp(await this.vocabulary(base.name, base.source), op);
  }

  private admit(request: GenerateRequest, model: LlamaModel, prompt: Token[], signal: AbortSignal): Promise<Lease> {
    const queue = this.queueOf(request.base.name);
    const seen = this.lastSeen.get(request.base.name) ?? new Map<string, number>();
    this.lastSeen.set(request.base.name, seen);
    seen.set(request.tenant, performance.now());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        tenant: request.tenant,
        n: request.n,
        priority: request.priority,
        arrival: this.arrivals++,
        admit: async () => {
          try {
            const taken = await this.pools.take(model, request.base.name, request.adapterPath, request.n, request.cacheSalt, prompt);
            if (!taken) return false;
            if (signal.aborted) {
              // Cancelled while its sequences were being prepared: they go back at once.
              void taken.prepared.catch(() => undefined).then(() => {
                this.pools.release(request.base.name, request.adapterPath, taken.sequences);
                this.pump(request.base.name);
              });
              reject(new EngineRequestError("internal", "cancelled"));
              return true;
            }
            this.countRunning(request, taken.sequences.length);
            resolve(taken);
          } catch (error) {
            // This request cannot be served (no room for its context at all, a context that failed
            // to load): it leaves the queue with the error, the others keep their turn.
            reject(error);
          }
          return true;
        },
        displace: reject,
      };
      const placed = queue.enqueue(waiter);
      if (!placed.admitted) {
        reject(new EngineRequestError("overloaded", `model ${request.base.name}: ${placed.reason}; retry shortly`));
        return;
      }
      placed.displaced?.displace(new EngineRequestError("overloaded", `model ${request.base.name}: its waiting room is full and another entity needed this request's place (${queue.length} waiting, ENGINE_MAX_QUEUE=${this.settings.maxQueue}); retry shortly`));
      signal.addEventListener("abort", () => {
        if (queue.remove(waiter)) reject(new EngineRequestError("internal", "cancelled"));
      });
      this.pump(request.base.name);
    });
  }

  private queueOf(baseName: string): FairQueue<Waiter> {
    let queue = this.queues.get(baseName);
    if (!queue) {
      const maxQueuePerTenant = this.settings.maxQueuePerEntity > 0 ? this.settings.maxQueuePerEntity : this.settings.maxQueue;
      queue = new FairQueue<Waiter>({ maxQueue: this.settings.maxQueue, maxQueuePerTenant });
      this.queues.set(baseName, queue);
    }
    return queue;
  }

  /**
   * Sequences of a base model one entity may hold. By default all of them while no other entity
   * has used the model lately, else all but one: generation cannot be pre-empted, so the one kept
   * free lets the others start at once instead of waiting for a long generation to end.
   */
  private sequenceShare(baseName: string, tenant: string): number {
    const configured = this.settings.maxSequencesPerEntity;
    if (configured > 0) return configured;
    const since = performance.now() - SHARED_WINDOW_MS;
    const seen = this.lastSeen.get(baseName) ?? new Map<string, number>();
    for (const [other, at] of seen) {
      if (at < since) seen.delete(other);
      else if (other !== tenant) return Math.max(1, this.settings.sequences - 1);
    }
    return this.settings.sequences;
  }

  private countRunning(request: GenerateRequest, change: number): void {
    const byTenant = this.running.get(request.base.name) ?? new Map<string, number>();
    this.running.set(request.base.name, byTenant);
    const count = (byTenant.get(request.tenant) ?? 0) + change;
    if (count > 0) byTenant.set(request.tenant, count);
    else byTenant.delete(request.tenant);
  }

  private readonly pumping = new Set<string>();
  private readonly pumpAgain = new Set<string>();

  /** Admits waiting requests in turn while sequences are free; a call during a pass runs another pass. */
  private pump(baseName: string): void {
    if (this.pumping.has(baseName)) {
      this.pumpAgain.add(baseName);
      return;
    }
    this.pumping.add(baseName);
    void (async () => {
      try {
        do {
          this.pumpAgain.delete(baseName);
          const queue = this.queueOf(baseName);
          const runningOf = (tenant: string) => this.running.get(baseName)?.get(tenant) ?? 0;
          // An entity running nothing may always start; one that runs some stays within its share.
          const mayRun = (waiter: Waiter) => runningOf(waiter.tenant) === 0 || runningOf(waiter.tenant) + waiter.n <= this.sequenceShare(baseName, waiter.tenant);
          for (let next = queue.next(runningOf, mayRun); next !== undefined; next = queue.next(runningOf, mayRun)) {
            if (!(await next.admit())) break;
            queue.remove(next);
          }
        } while (this.pumpAgain.has(baseName));
      } finally {
        this.pumping.delete(baseName);
      }
    })();
  }

  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();

  /** Parsed grammars, kept for reuse (requests with one schema usually come in series). */
  private async grammar(text: string): Promise<LlamaGrammar> {
    let grammar = this.grammars.get(text);
    if (!grammar) {
      const llama = await this.sharedLlama();
      grammar = llama.createGrammar({ grammar: text });
      this.grammars.set(text, grammar);
      if (this.grammars.size > 32) this.grammars.delete(this.grammars.keys().next().value as string);
      grammar.catch(() => this.grammars.delete(text));
    }
    try {
      return await grammar;
    } catch (error) {
      throw new EngineRequestError("bad_request", `the grammar does not parse: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** A base model's context per sequence (what generation allows), or null when its file is not here. */
  describe(base: BaseModelRef): Promise<number | null> {
    return describeBaseModel(base, { sizes: this.sizes, dataDir: this.settings.dataDir, llama: () => this.sharedLlama() });
  }

  /** The one llama.cpp binding of this engine, loaded (and its binary logged) on first use. */
  private sharedLlama(): Promise<Llama> {
    return (this.llama ??= loadLlama(this.settings.binary).then((llama) => {
      logBinary(this.log, describeBinary(llama), this.settings.binary);
      return llama;
    }));
  }

  /** Tests of crash handling only (ENGINE_FAULT_INJECTION): this process dies of the signal named for the model. */
  private async injectFault(baseName: string): Promise<void> {
    const fault = this.settings.faults.find((candidate) => candidate.model === baseName);
    if (!fault) return;
    if (fault.build !== null && describeBinary(await this.sharedLlama()).build !== fault.build) return;
    this.log.warn("fault injection: the engine kills itself", { model: baseName, signal: fault.signal });
    process.kill(process.pid, fault.signal);
    // The signal is delivered at once; nothing of this request may run meanwhile.
    await new Promise(() => {});
  }

  private readonly vocabularies = new Map<string, Promise<LlamaModel>>();

  /** A base model's tokenizer and template without its weights (for prompts of remote engines). */
  private vocabulary(name: string, source: string): Promise<LlamaModel> {
    return this.loaded(this.vocabularies, name, source, true);
  }

  private model(name: string, source: string): Promise<LlamaModel> {
    return this.loaded(this.models, name, source, false);
  }

  /** A model loaded once per base model name (a failed load is tried again by the next request). */
  private loaded(cache: Map<string, Promise<LlamaModel>>, name: string, source: string, vocabOnly: boolean): Promise<LlamaModel> {
    let model = cache.get(name);
    if (!model) {
      model = (async () => {
        const llama = await this.sharedLlama();
        return llama.loadModel({ modelPath: await modelPath(source, this.settings.dataDir, this.settings.hubTimeoutMs), vocabOnly });
      })();
      cache.set(name, model);
      model.catch(() => cache.delete(name));
    }
    return model;
  }
}
