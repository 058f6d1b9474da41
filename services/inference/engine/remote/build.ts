// ENGINES -> one RemoteEngine per configured base model: its replicas (given as URLs, or
// llama-server processes started here with the base model's GGUF) behind the backend of its kind.
import { join } from "node:path";
import type { Logger } from "../../../core/logger.js";
import type { BaseModelCatalog } from "../../../models/index.js";
import type { InferenceEngine } from "../inference-engine.js";
import { modelPath } from "../llama/model-source.js";
import type { Backend } from "./backend.js";
import type { LaunchSettings, RemoteEngineSettings } from "../../../core/engines-config.js";
import { LlamaServerBackend } from "./llama-server.js";
import { LlamaServerProcesses } from "./processes.js";
import { RemoteEngine, type PromptRenderer } from "./remote-engine.js";
import { Replica } from "./replica.js";
import { VllmBackend } from "./vllm.js";

export async function buildRemoteEngines(
  engines: readonly RemoteEngineSettings[],
  deps: { catalog: BaseModelCatalog; renderer: PromptRenderer; dataDir: string; hubTimeoutMs: number; log: Logger },
): Promise<Map<string, InferenceEngine>> {
  const built = new Map<string, InferenceEngine>();
  for (const settings of engines) {
    const base = deps.catalog.get(settings.base);
    if (!base) throw new Error(`ENGINES["${settings.base}"]: no such base model in the catalog (${deps.catalog.names().join(", ")}); add it to BASE_MODELS`);
    const log = deps.log.child({ component: "remote-engine", base: settings.base, kind: settings.kind });
    const replicas = settings.replicas.map((url) => new Replica(url));
    let processes: LlamaServerProcesses | null = null;
    if (settings.launch) {
      const launch: RemoteEngineSettings & { launch: LaunchSettings } = { ...settings, launch: settings.launch };
      processes = await LlamaServerProcesses.start(launch, () => modelPath(base.source, deps.dataDir, deps.hubTimeoutMs), join(deps.dataDir, "logs"), log);
      replicas.push(...processes.replicas);
    }
    const running = processes;
    const backend: Backend =
      settings.kind === "vllm"
        ? new VllmBackend(settings)
        : new LlamaServerBackend(settings, running ? { has: (replica) => running.has(replica), load: (replica, adapter) => running.load(replica, adapter) } : null);
    built.set(settings.base, new RemoteEngine(settings, replicas, backend, deps.renderer, log, processes));
    log.info("remote engine configured", { replicas: replicas.map((replica) => replica.url), launched: processes?.replicas.length ?? 0 });
  }
  return built;
}
