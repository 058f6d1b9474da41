// Child processes the service supervises (the embedded database, the trainer): spawned under a
// guard that takes them down with this process, logged to a file in the data directory, stopped
// gracefully then forcibly.
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, closeSync, constants, existsSync, openSync, statSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { createServer } from "node:net";
import { constants as osConstants } from "node:os";
import path from "node:path";

const STOP_GRACE_MS = 5_000;

export interface ManagedChild {
  process: ChildProcess;
  /** Resolves with how it ended ("code 1", "signal SIGKILL") once the process is gone. */
  exited: Promise<string>;
  stop(): Promise<void>;
}

// Runs "$@" under sh and SIGTERMs it when stdin reaches EOF: the parent holds
// the pipe's other end, so the child goes down however the parent ends,
// even on SIGKILL, where no 'exit' handler runs. SIGTERM to the guard is
// passed on too. The guard exits with the child's status, after it.
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

export function spawnLogged(bin: string, args: string[], logFile: string, options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): ManagedChild {
  const fd = openSync(logFile, "a");
  // The log is appended to across runs: mark where this one starts.
  writeSync(fd, `\n--- ${new Date().toISOString()} launcher: ${bin} ${args.join(" ")}\n`);
  let child: ChildProcess;
  try {
    // detached: own process group, so the SIGKILL fallback reaches the child too.
    child = spawn("sh", ["-c", GUARD_SCRIPT, `${path.basename(bin)}-guard`, bin, ...args], {
      stdio: ["pipe", fd, fd],
      detached: true,
      ...options,
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

/** A signal with what it means, as people search for it: "SIGILL (illegal instruction)". */
export function describeSignal(signal: NodeJS.Signals): string {
  const meaning: Partial<Record<NodeJS.Signals, string>> = {
    SIGILL: "illegal instruction",
    SIGSEGV: "segmentation fault",
    SIGBUS: "bus error",
    SIGABRT: "aborted",
    SIGFPE: "arithmetic exception",
    SIGKILL: "killed",
  };
  const number = osConstants.signals[signal];
  return `${signal}${meaning[signal] ? ` (${meaning[signal]})` : number !== undefined ? ` (signal ${number})` : ""}`;
}

// The guard exits 128+n when the child died of signal n (sh's convention).
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
      process.kill(-child.pid, "SIGKILL"); // the whole group: guard and child
    } catch {
      // already gone
    }
    await exited;
  }
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
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

/** The `nice` command (runs a process at a lower CPU priority), or null where none is installed. */
export function niceCommand(): string | null {
  return ["/usr/bin/nice", "/bin/nice"].find((candidate) => existsSync(candidate)) ?? null;
}
