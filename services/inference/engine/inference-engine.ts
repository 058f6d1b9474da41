// What the inference service asks of an engine, whichever runs a base model: the embedded
// llama.cpp child process (engine/client.ts) or a set of remote OpenAI-compatible servers
// (engine/remote). EngineSet sends each request to the engine of its base model, within each
// entity's limit of generations in flight.
import { overloaded } from "../../core/errors.js";
import { observedGeneration } from "./generation-metrics.js";
import type { BaseModelRef, EngineToGateway, GenerateRequest } from "./protocol.js";

/** The events of one generation: started, deltas and finishes per choice, then done. */
export type EngineEvent = Exclude<EngineToGateway, { type: "ready" } | { type: "failed" } | { type: "described" } | { type: "rendered" } | { type: "usage" } | { type: "tokenizerAnswer" }>;

export interface InferenceEngine {
  /** The events of one generation, ending after `done`; errors are thrown as ApiError. */
  generate(request: Omit<GenerateRequest, "id">, signal: AbortSignal): AsyncGenerator<EngineEvent>;
  /** The longest prompt plus completion a request may have; null when unknown. Never rejects. */
  describeModel(base: BaseModelRef): Promise<{ maxModelLen: number | null }>;
  stop(): Promise<void>;
}

export class EngineSet implements InferenceEngine {
  /** Generations in flight per entity, over every engine. */
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly embedded: InferenceEngine,
    /** Base model name -> the engine serving it instead of the embedded one. */
    private readonly remote: ReadonlyMap<string, InferenceEngine>,
    private readonly limits: { maxGenerationsPerEntity: number } = { maxGenerationsPerEntity: 0 },
  ) {}

  async *generate(request: Omit<GenerateRequest, "id">, signal: AbortSignal): AsyncGenerator<EngineEvent> {
    const tenant = request.tenant;
    const held = this.inFlight.get(tenant) ?? 0;
    const max = this.limits.maxGenerationsPerEntity;
    if (max > 0 && held >= max) {
      throw overloaded(`this entity already has ${held} chat or completion requests in flight (ENTITY_MAX_GENERATIONS=${max}); retry when one has finished`);
    }
    this.inFlight.set(tenant, held + 1);
    try {
      yield* observedGeneration({ model_name: request.base.name, entity: tenant }, this.of(request.base.name).generate(request, signal), signal);
    } finally {
      const left = (this.inFlight.get(tenant) ?? 1) - 1;
      if (left > 0) this.inFlight.set(tenant, left);
      else this.inFlight.delete(tenant);
    }
  }

  describeModel(base: BaseModelRef): Promise<{ maxModelLen: number | null }> {
    return this.of(base.name).describeModel(base);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.remote.values()].map((engine) => engine.stop()));
    await this.embedded.stop();
  }

  private of(baseName: string): InferenceEngine {
    return this.remote.get(baseName) ?? this.embedded;
  }
}
