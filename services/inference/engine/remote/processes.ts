// llama-server replicas this service runs on its own machine (ENGINES launch): started with the
// base model's GGUF, supervised (one that dies is marked down at once and started again, waiting
// longer after each failure), and restarted to load adapters, since llama-server opens LoRA files
// only at start. Strategy for new steps: a replica keeps the `maxAdapters` most recently used
// adapters; a request for one it lacks restarts the least loaded replica with that adapter added
// (the least recently used dropped), after its requests in flight finish (at most DRAIN_MS), while
// the other replicas keep serving.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { unavailable } from "../../../core/errors.js";
import type { Logger } from "../../../core/logger.js";
import { errorMessage, freePort, sleep, spawnLogged, tail, type ManagedChild } from "../../../core/child-process.js";
import type { AdapterRef } from "./backend.js";
import type { LaunchSettings, RemoteEngineSettings } from "../../../core/engines-config.js";
import { deliverAdapter } from "./adapter-delivery.js";
import { Replica } from "./replica.js";
import type { ReplicaProcesses } from "./remote-engine.js";

/** How long in-flight requests may run on a replica about to restart for an adapter. */
const DRAIN_MS = 60_000;
/** How long a starting llama-server may take to answer its health check. */
const START_MS = 180_000;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

export class LlamaServerProcesses implements ReplicaProcesses {
  private readonly children = new Map<Replica, ManagedChild>();
  private readonly pending = new Map<Replica, Set<string>>();
  /** Adapter key -> its GGUF path as llama-server opens it. */
  private readonly files = new Map<string, string>();
  private readonly failures = new Map<Replica, number>();
  private stopping = false;

  private constructor(
    private readonly settings: RemoteEngineSettings & { launch: LaunchSettings },
    readonly replicas: Replica[],
    private readonly modelPath: () => Promise<string>,
    private readonly logDir: string,
    private readonly log: Logger,
  ) {}

  static async start(settings: RemoteEngineSettings & { launch: LaunchSettings }, modelPath: () => Promise<string>, logDir: string, log: Logger): Promise<LlamaServerProcesses> {
    await mkdir(logDir, { recursive: true });
    const replicas: Replica[] = [];
    for (let i = 0; i < settings.launch.count; i++) replicas.push(new Replica(`http://127.0.0.1:${await freePort()}`));
    const processes = new LlamaServerProcesses(settings, replicas, modelPath, logDir, log);
    for (const replica of replicas) {
      processes.restart(replica, [], false).catch((error: unknown) => {
        log.error("llama-server replica failed to start", { base: settings.base, replica: replica.url, error: errorMessage(error) });
        void processes.relaunchLater(replica, []);
      });
    }
    return processes;
  }

  has(replica: Replica): boolean {
    return this.replicas.includes(replica);
  }

  loading(replica: Replica): ReadonlySet<string> {
    return this.pending.get(replica) ?? new Set();
  }

  /** Restarts the replica with the adapter among its set (unless a restart under way brings it). */
  async load(replica: Replica, adapter: AdapterRef): Promise<void> {
    while (replica.restarting) await replica.restarting;
    if (replica.adapters.has(adapter.key)) return;
    // Most recently used last; the oldest go when the set is full. The restart is registered at
    // once (no await before it), so concurrent requests for this adapter wait for it rather than
    // restart another replica.
    const keys = [...replica.adapters.keys(), adapter.key].slice(-this.settings.maxAdapters);
    await this.restart(replica, keys, true, async () => {
      this.files.set(adapter.key, await deliverAdapter(this.settings, adapter, "gguf"));
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.children.values()].map((child) => child.stop()));
  }

  /** Starts (or restarts) a replica with these adapters; requests wait on replica.restarting meanwhile. */
  private restart(replica: Replica, keys: string[], drain: boolean, before?: () => Promise<void>): Promise<void> {
    this.pending.set(replica, new Set(keys));
    const run = (async () => {
      await before?.();
      if (drain) {
        const until = Date.now() + DRAIN_MS;
        while (replica.inflight > 0 && Date.now() < until) await sleep(50);
      }
      await this.children.get(replica)?.stop();
      await this.launch(replica, keys);
    })();
    replica.restarting = run;
    return run.finally(() => {
      if (replica.restarting === run) replica.restarting = null;
      this.pending.delete(replica);
    });
  }

  private async launch(replica: Replica, keys: string[]): Promise<void> {
    const { launch } = this.settings;
    const index = this.replicas.indexOf(replica);
    const port = new URL(replica.url).port;
    const args = [
      "-m", await this.modelPath(),
      "--host", "127.0.0.1",
      "--port", port,
      "-np", String(launch.slots),
      "--no-webui",
      ...(launch.threads > 0 ? ["-t", String(launch.threads)] : []),
      ...(launch.contextPerSlot > 0 ? ["-c", String(launch.contextPerSlot * launch.slots)] : []),
      ...(keys.length > 0 ? ["--lora-init-without-apply", ...keys.flatMap((key) => ["--lora", this.files.get(key) as string])] : []),
      ...launch.args,
    ];
    const logFile = join(this.logDir, `llama-server-${this.settings.base.replace(/[^\w.-]/g, "_")}-${index}.log`);
    this.log.info("starting llama-server replica", { base: this.settings.base, replica: replica.url, adapters: keys.length, log: logFile });
    const child = spawnLogged(launch.binary, args, logFile);
    this.children.set(replica, child);
    let exited: string | null = null;
    void child.exited.then((how) => {
      exited = how;
      if (this.stopping || this.children.get(replica) !== child || replica.restarting) return;
      // Died while serving: down at once, started again with the same adapters.
      replica.up = false;
      replica.lastError = `llama-server exited (${how})`;
      this.log.error("llama-server replica exited", { base: this.settings.base, replica: replica.url, how, log: logFile });
      void this.relaunchLater(replica, [...replica.adapters.keys()]);
    });
    const deadline = Date.now() + START_MS;
    for (;;) {
      if (exited !== null) {
        const why = `llama-server for ${this.settings.base} exited while starting (${exited}): ${(await tail(logFile, 800)).trim().split("\n").slice(-4).join(" | ")}`;
        replica.up = false;
        replica.lastError = why;
        throw unavailable(why);
      }
      if (Date.now() > deadline) {
        await child.stop();
        throw unavailable(`llama-server for ${this.settings.base} did not become ready within ${START_MS / 1000} s (log: ${logFile})`);
      }
      const ready = await fetch(`${replica.url}/health`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
      if (ready) break;
      await sleep(200);
    }
    // llama-server numbers adapters in the order of --lora.
    replica.adapters.clear();
    keys.forEach((key, id) => replica.markLoaded(key, String(id)));
    replica.up = true;
    replica.lastError = "";
    this.failures.delete(replica);
    this.log.info("llama-server replica ready", { base: this.settings.base, replica: replica.url, adapters: keys.length });
  }

  private async relaunchLater(replica: Replica, keys: string[]): Promise<void> {
    const failures = (this.failures.get(replica) ?? 0) + 1;
    this.failures.set(replica, failures);
    await sleep(Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1)));
    if (this.stopping || replica.restarting) return;
    try {
      await this.restart(replica, keys, false);
    } catch (error) {
      this.log.error("llama-server replica failed to start again", { base: this.settings.base, replica: replica.url, error: errorMessage(error) });
      if (!this.stopping) void this.relaunchLater(replica, keys);
    }
  }
}
