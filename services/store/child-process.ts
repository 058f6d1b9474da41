// The embedded database's process: spawned under a guard that takes it down with this process,
// logged to a file in the data directory, stopped gracefully then forcibly, and pinged until ready.
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, closeSync, constants, openSync, statSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { constants as osConstants } from "node:os";
import path from "node:path";
import { MongoClient } from "mongodb";

const STOP_GRACE_MS = 5_000;

export interface ManagedChild {
  process: ChildProcess;
  /** Resolves with how it ended ("code 1", "signal SIGKILL") once the database is gone. */
  exited: Promise<string>;
  stop(): Promise<void>;
}

// Runs "$@" under sh and SIGTERMs it when stdin reaches EOF: the parent holds
// the pipe's other end, so the database goes down however the parent ends,
// even on SIGKILL, where no 'exit' handler runs. SIGTERM to the guard is
// passed on too. The guard exits with the database's status, after it.
const GUARD_SCRIPT = `
exec 3<&0
"$@" </dev/null 3<&- &
child=$!
( read -r _ <&3; kill -TERM "$child" 2>/dev/null ) &
watcher=$!
exec 3<&-
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
status=0
wait "$child" || status=$?
while kill -0 "$child" 2>/dev/null; do wait "$child" || status=$?; done
kill "$watcher" 2>/dev/null
exit "$status"
`;

// Children still running when this process exits; told to stop from one handler.
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

export function spawnLogged(bin: string, args: string[], logFile: string): ManagedChild {
  const fd = openSync(logFile, "a");
  // The log is appended to across runs: mark where this one starts.
  writeSync(fd, `\n--- ${new Date().toISOString()} launcher: ${bin} ${args.join(" ")}\n`);
  let child: ChildProcess;
  try {
    // detached: own process group, so the SIGKILL fallback reaches the database too.
    child = spawn("sh", ["-c", GUARD_SCRIPT, `${path.basename(bin)}-guard`, bin, ...args], {
      stdio: ["pipe", fd, fd],
      detached: true,
    });
  } finally {
    closeSync(fd); // the child holds its own copy
  }
  child.stdin?.on("error", () => undefined); // EPIPE once the guard is gone
  const exited = new Promise<string>((resolve) => {
    child.once("exit", (code, signal) => resolve(describeExit(code, signal)));
    child.once("error", (err) => resolve(`could not start: ${err.message}`)); // no process to wait for
  });
  liveChildren.add(child);
  void exited.then(() => liveChildren.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of liveChildren) c.kill("SIGTERM");
    });
  }

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= stopChild(child, exited));
  return { process: child, exited, stop };
}

// The guard exits 128+n when the database died of signal n (sh's convention).
function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal !== null) return `signal ${signal}`;
  if (code !== null && code > 128) {
    const name = Object.entries(osConstants.signals).find(([, n]) => n === code - 128)?.[0];
    if (name !== undefined) return `signal ${name}`;
  }
  return `code ${code}`;
}

async function stopChild(child: ChildProcess, exited: Promise<string>): Promise<void> {
  if (hasExited(child)) return;
  child.stdin?.end();
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), STOP_GRACE_MS);
  });
  const forced = await Promise.race([exited.then(() => false), timedOut]);
  clearTimeout(timer);
  if (forced && child.pid !== undefined) {
    try {
      process.kill(-child.pid, "SIGKILL"); // the whole group: guard and database
    } catch {
      // already gone
    }
    await exited;
  }
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

// ---- readiness ----

export async function waitForPing(uri: string, timeoutMs: number, child: ManagedChild | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = "no attempt made";
  while (Date.now() < deadline) {
    if (child !== undefined && hasExited(child.process)) {
      throw new Error(`process exited early (${await child.exited})`);
    }
    // A refused TCP connect is cheap to retry; the driver would instead sit
    // out a heartbeat interval before trying again.
    if (!(await acceptsConnections(uri))) {
      lastError = "connection refused";
      await sleep(50);
      continue;
    }
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1_000, connectTimeoutMS: 1_000, directConnection: true });
    try {
      await client.db("admin").command({ ping: 1 });
      return;
    } catch (err) {
      lastError = errorMessage(err);
    } finally {
      await client.close().catch(() => undefined);
    }
    await sleep(200);
  }
  throw new Error(`no answer to ping at ${uri} within ${timeoutMs / 1000} s (last error: ${lastError})`);
}

function acceptsConnections(uri: string): Promise<boolean> {
  const { hostname, port } = new URL(uri);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

// ---- small helpers ----

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("could not read a free port"))));
    });
  });
}

export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

export async function tail(file: string, maxBytes = 4_096): Promise<string> {
  try {
    const handle = await open(file, "r");
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, maxBytes);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      return buffer.toString("utf8");
    } finally {
      await handle.close();
    }
  } catch (err) {
    return `(could not read ${file}: ${errorMessage(err)})`;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
