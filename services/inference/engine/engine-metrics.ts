// The engines' state for /metrics, read at scrape time: the embedded engine's process and loaded
// contexts (its sequences, KV cells and adapters, asked of the child process), and each remote
// replica's health and adapters as routing last saw them.
import { instruments, type ScrapeSource } from "../../core/metrics/index.js";
import type { EngineClient } from "./client.js";
import type { InferenceEngine } from "./inference-engine.js";

/** A remote engine (remote/remote-engine.ts), known by what it reports: engine/remote imports this folder, not the reverse. */
interface WithReplicas {
  replicaStates(): { url: string; up: boolean; adapters: number }[];
}
const hasReplicas = (engine: InferenceEngine): engine is InferenceEngine & WithReplicas => typeof (engine as Partial<WithReplicas>).replicaStates === "function";

export function engineScrapeSource(embedded: EngineClient, remote: ReadonlyMap<string, InferenceEngine>): ScrapeSource {
  return async () => {
    const usage = await embedded.usage();
    // Not running is not down: the process starts on the next request.
    instruments.engineUp.set({ engine: "embedded", replica: "" }, usage.refusedModels === 0 ? 1 : 0);
    instruments.refusedModels.set(usage.refusedModels);
    // Models whose contexts were freed since the last scrape read 0, not their last value.
    for (const gauge of [instruments.kvCacheUsage, instruments.engineSequences, instruments.engineContexts]) gauge.reset();
    instruments.loadedAdapters.reset();
    const byModel = new Map<string, { contexts: number; adapters: number; sequences: number; inUse: number; cells: number; cellsInUse: number }>();
    for (const pool of usage.pools) {
      const sum = byModel.get(pool.model) ?? { contexts: 0, adapters: 0, sequences: 0, inUse: 0, cells: 0, cellsInUse: 0 };
      sum.contexts++;
      if (pool.adapter) sum.adapters++;
      sum.sequences += pool.sequences;
      sum.inUse += pool.sequencesInUse;
      sum.cells += pool.cells;
      sum.cellsInUse += pool.cellsInUse;
      byModel.set(pool.model, sum);
    }
    for (const [model, sum] of byModel) {
      instruments.engineContexts.set({ model_name: model }, sum.contexts);
      instruments.loadedAdapters.set({ model_name: model, engine: "embedded" }, sum.adapters);
      instruments.engineSequences.set({ model_name: model, state: "total" }, sum.sequences);
      instruments.engineSequences.set({ model_name: model, state: "in_use" }, sum.inUse);
      instruments.kvCacheUsage.set({ model_name: model }, sum.cells > 0 ? sum.cellsInUse / sum.cells : 0);
    }
    for (const [model, engine] of remote) {
      if (!hasReplicas(engine)) continue;
      const replicas = engine.replicaStates();
      instruments.engineReplicas.set({ model_name: model }, replicas.length);
      instruments.loadedAdapters.set({ model_name: model, engine: "remote" }, replicas.reduce((sum, r) => sum + r.adapters, 0));
      for (const replica of replicas) instruments.engineUp.set({ engine: "remote", replica: replica.url }, replica.up ? 1 : 0);
    }
  };
}
