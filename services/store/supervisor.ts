// Keeps the embedded database running: when it exits without being asked to, the supervisor logs
// it and starts it again on the same port and data directory, with a backoff that doubles from
// `restartDelayMs` up to 30 s while it keeps failing. Clients keep their URI: the driver
// reconnects by itself once the database answers again.
import path from "node:path";
import { errorMessage, freePort, spawnLogged, tail, type ManagedChild } from "../core/child-process.js";
import { waitForPing } from "./ping.js";
import type { DatabaseKind, DatabaseProgram, LauncherLog } from "./database-program.js";

const READY_TIMEOUT_MS = 30_000;
const PORT_ATTEMPTS = 3;
const MAX_RESTART_DELAY_MS = 30_000;
// A database that stayed up this long before it exited starts again at the first delay.
const STABLE_AFTER_MS = 60_000;

export interface SupervisedStatus {
  kind: DatabaseKind;
  state: "running" | "restarting" | "stopped";
  /** When it entered this state. */
  since: Date;
  /** Restarts after unexpected exits since the service started. */
  restarts: number;
  /** How it last ended, and why the last restart attempt failed, while it is not running. */
  lastError?: string;
}

export interface SupervisedDatabase {
  uri: string;
  kind: DatabaseKind;
  status(): SupervisedStatus;
  stop(): Promise<void>;
}

export interface SuperviseOptions {
  dataDir: string;
  log: LauncherLog;
  /** The first restart waits this long; each failed attempt doubles it. */
  restartDelayMs: number;
}

export async function startSupervised(program: DatabaseProgram, opts: SuperviseOptions): Promise<SupervisedDatabase> {
  const logFile = path.join(opts.dataDir, `${program.kind}.log`);
  const { child, port } = await startOnFreePort(program, logFile);
  return new Supervisor(program, opts, logFile, port, child);
}

async function startOnFreePort(program: DatabaseProgram, logFile: string): Promise<{ child: ManagedChild; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return { child: await startOn(program, port, logFile), port };
    } catch (err) {
      const logTail = await tail(logFile);
      const thisRun = logTail.slice(logTail.lastIndexOf("\n--- "));
      // The port was free when picked but another process may grab it first.
      if (attempt < PORT_ATTEMPTS && /address already in use|EADDRINUSE/i.test(thisRun)) continue;
      throw new Error(`${program.kind} (${program.bin}) did not become ready: ${errorMessage(err)}\n--- ${logFile} (tail) ---\n${logTail}`);
    }
  }
}

async function startOn(program: DatabaseProgram, port: number, logFile: string): Promise<ManagedChild> {
  const child = spawnLogged(program.bin, program.args(port), logFile);
  try {
    await waitForPing(program.uri(port), READY_TIMEOUT_MS, child);
    await program.prepare(port);
    return child;
  } catch (err) {
    await child.stop();
    throw err;
  }
}

class Supervisor implements SupervisedDatabase {
  readonly uri: string;
  readonly kind: DatabaseKind;
  private state: SupervisedStatus["state"] = "running";
  private since = new Date();
  private restarts = 0;
  private lastError: string | undefined;
  private delayMs: number;
  private timer: NodeJS.Timeout | undefined;
  private attempt: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly program: DatabaseProgram,
    private readonly opts: SuperviseOptions,
    private readonly logFile: string,
    private readonly port: number,
    private child: ManagedChild,
  ) {
    this.uri = program.uri(port);
    this.kind = program.kind;
    this.delayMs = opts.restartDelayMs;
    this.watch(child);
  }

  status(): SupervisedStatus {
    return {
      kind: this.kind,
      state: this.state,
      since: this.since,
      restarts: this.restarts,
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
    };
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearTimeout(this.timer);
      await this.attempt;
      await this.child.stop();
      this.enter("stopped");
    })();
    return this.stopping;
  }

  private watch(child: ManagedChild): void {
    const startedAt = Date.now();
    void child.exited.then((how) => {
      if (this.stopping !== undefined || child !== this.child) return;
      if (Date.now() - startedAt >= STABLE_AFTER_MS) this.delayMs = this.opts.restartDelayMs;
      this.lastError = `${this.kind} exited (${how})`;
      this.enter("restarting");
      this.opts.log("error", "embedded database exited", { kind: this.kind, how, pid: child.process.pid, restartInMs: this.delayMs, logFile: this.logFile });
      this.schedule();
    });
  }

  private schedule(): void {
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, MAX_RESTART_DELAY_MS);
    this.timer = setTimeout(() => {
      this.attempt = this.restart().finally(() => (this.attempt = undefined));
    }, delay);
  }

  private async restart(): Promise<void> {
    if (this.stopping !== undefined) return;
    const downSince = this.since;
    try {
      // The same port: every client holds this URI.
      const child = await startOn(this.program, this.port, this.logFile);
      if (this.stopping !== undefined) {
        await child.stop();
        return;
      }
      this.child = child;
      this.restarts += 1;
      this.lastError = undefined;
      this.enter("running");
      this.watch(child);
      this.opts.log("info", "embedded database restarted", { kind: this.kind, restarts: this.restarts, pid: child.process.pid, downMs: Date.now() - downSince.getTime() });
    } catch (err) {
      this.lastError = `restart failed: ${errorMessage(err)}`;
      this.opts.log("error", "embedded database restart failed", { kind: this.kind, error: errorMessage(err), retryInMs: this.delayMs, logFile: this.logFile });
      if (this.stopping === undefined) this.schedule();
    }
  }

  private enter(state: SupervisedStatus["state"]): void {
    if (this.state === state) return;
    this.state = state;
    this.since = new Date();
  }
}
