// What the inference service asks of an engine, whichever runs a base model: the embedded
// llama.cpp child process (engine/client.ts) or a set of remote OpenAI-compatible servers
// (engine/remote). EngineSet sends each request to the engine of its base model.
import type { BaseModelRef, EngineToGateway, GenerateRequest } from "./protocol.js";

/** The events of one generation: started, deltas and finishes per choice, then done. */
export type EngineEvent = Exclude<EngineToGateway, { type: "ready" } | { type: "failed" } | { type: "described" } | { type: "rendered" }>;

export interface InferenceEngine {
  /** The events of one generation, ending after `done`; errors are thrown as ApiError. */
  generate(request: Omit<GenerateRequest, "id">, signal: AbortSignal): AsyncGenerator<EngineEvent>;
  /** The longest prompt plus completion a request may have; null when unknown. Never rejects. */
  describeModel(base: BaseModelRef): Promise<{ maxModelLen: number | null }>;
  stop(): Promise<void>;
}

export class EngineSet implements InferenceEngine {
  constructor(
    private readonly embedded: InferenceEngine,
    /** Base model name -> the engine serving it instead of the embedded one. */
    private readonly remote: ReadonlyMap<string, InferenceEngine>,
  ) {}

  generate(request: Omit<GenerateRequest, "id">, signal: AbortSignal): AsyncGenerator<EngineEvent> {
    return this.of(request.base.name).generate(request, signal);
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
