// The trainer process of this machine: `python -m srl_trainer` from the project's Python
// environment, started on first use, logged to DATA_DIR/logs/trainer.log, taken down with this
// process, and started again when it has died (its job then ends as a lost trainer: ../index.ts)
// or ran past a deadline (restart()). It binds a free loopback port itself and writes the port to
// a file of this process's (no port found free here and bound there later, which another process
// could take in between), and it answers only calls carrying the installation's secret
// (./trainer-secret.ts), given to it in its environment.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { hasExited, sleep, spawnLogged, tail, type ManagedChild } from "../../../core/child-process.js";
import type { Logger } from "../../../core/logger.js";
import { TrainerClient } from "./trainer-client.js";
import { installationSecret } from "./trainer-secret.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const PACKAGE_DIR = join(REPO_ROOT, "services/training/torch_trainer");
/** Where scripts/install-trainer.sh links the environment. */
export const DEFAULT_TRAINER_PYTHON = join(REPO_ROOT, ".cache/trainer-venv/bin/python");
/** Importing torch and transformers takes seconds, more on a cold disk. */
const READY_TIMEOUT_MS = 180_000;

export interface LocalTrainerOptions {
  python: string;
  dataDir: string;
  /** CPU threads; 0: the cores this process may use. */
  threads: number;
  /** Niceness of the trainer process (TRAINER_NICE): training yields the CPU to serving. */
  nice?: number;
  log: Logger;
}

interface Running {
  child: ManagedChild;
  client: TrainerClient;
}

export class LocalTrainer {
  /** Bumped on every start: a job that saw another generation lost its trainer. */
  generation = 0;
  private running: Running | undefined;
  private starting: Promise<Running> | undefined;
  private stopped = false;

  constructor(private readonly options: LocalTrainerOptions) {}

  get logFile(): string {
    return join(this.options.dataDir, "logs", "trainer.log");
  }

  /** The running trainer, started (or restarted) when needed. */
  async client(): Promise<TrainerClient> {
    const running = this.alive();
    if (running) return running.client;
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return (await this.starting).client;
  }

  /** The process id of the running trainer's guard (its process group), if one runs. */
  get pid(): number | undefined {
    return this.alive()?.child.process.pid;
  }

  /** Whether the trainer of `generation` is still the one running. */
  isAlive(generation: number): boolean {
    return this.generation === generation && this.alive() !== undefined;
  }

  private alive(): Running | undefined {
    return this.running && !hasExited(this.running.child.process) ? this.running : undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running?.child.stop();
  }

  /**
   * Takes down the trainer of `generation` (a call to it ran past its deadline: it may be hung, and
   * it holds its job lock); the next call starts a new one. A later generation is left alone.
   */
  async restart(generation: number, reason: string): Promise<void> {
    const running = this.running;
    if (!running || this.generation !== generation || hasExited(running.child.process)) return;
    this.options.log.warn("restarting the trainer process: it did not answer in time", { reason, log_file: this.logFile });
    await running.child.stop();
  }

  /** Where the trainer writes the port it bound: one file per process (workers may share DATA_DIR). */
  private get portFile(): string {
    return join(this.options.dataDir, "run", `trainer-${process.pid}.port`);
  }

  private async start(): Promise<Running> {
    if (this.stopped) throw new Error("the trainer is stopped");
    const { python, threads, log } = this.options;
    if (!existsSync(python)) {
      throw new Error(`the trainer's Python environment is missing (${python}); run \`bash scripts/install-trainer.sh\` (npm start and npm test do)`);
    }
    if (this.running) log.warn("the trainer process exited; starting it again", { exit: await this.running.child.exited });
    mkdirSync(dirname(this.logFile), { recursive: true });
    mkdirSync(dirname(this.portFile), { recursive: true });
    rmSync(this.portFile, { force: true }); // a previous trainer's port is not this one's
    const secret = installationSecret(this.options.dataDir);
    const args = ["-m", "srl_trainer", "--listen", "127.0.0.1:0", "--port-file", this.portFile, ...(threads > 0 ? ["--threads", String(threads)] : []), ...((this.options.nice ?? 0) > 0 ? ["--nice", String(this.options.nice)] : [])];
    const started = performance.now();
    log.info("starting the trainer process", { python, log_file: this.logFile });
    const child = spawnLogged(python, args, this.logFile, { cwd: PACKAGE_DIR, env: { ...process.env, TRAINER_SECRET: secret, PYTHONPATH: PACKAGE_DIR, PYTHONUNBUFFERED: "1" } });
    let client: TrainerClient | undefined;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (hasExited(child.process)) {
        throw new Error(`the trainer process exited at start (${await child.exited}): ${(await tail(this.logFile, 2_000)).trim()}`);
      }
      const port = client ? undefined : readPort(this.portFile);
      if (port !== undefined) client = new TrainerClient(`http://127.0.0.1:${port}`, { secret });
      const info = client ? await client.describe(2_000).catch(() => null) : null;
      if (client && info) {
        this.generation++;
        this.running = { child, client };
        log.info("trainer ready", { url: client.url, seconds: Math.round((performance.now() - started) / 100) / 10, device: info.device, threads: info.threads, versions: info.versions });
        return this.running;
      }
      if (Date.now() > deadline) {
        await child.stop();
        throw new Error(`the trainer did not answer within ${READY_TIMEOUT_MS / 1000} s; see ${this.logFile}`);
      }
      await sleep(250);
    }
  }
}

/** The port the trainer wrote (atomically, once serving), or undefined while there is none. */
function readPort(file: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const port = Number(text.trim());
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
}
