// Starts a local MongoDB-compatible database for development and tests:
// a real mongod if one is installed, else FerretDB (SQLite backend, built from
// the pinned Go module), else mongodb-memory-server. Returns a URI without a
// database name; which databases to use is the caller's business.
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, closeSync, constants, openSync, statSync, writeSync } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { connect, createServer } from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MongoClient } from "mongodb";

export type DatabaseKind = "mongod" | "ferretdb" | "memory";

export type LauncherLog = (
  level: "info" | "warn" | "error",
  msg: string,
  fields?: Record<string, unknown>,
) => void;

export interface EmbeddedDatabase {
  uri: string;
  kind: DatabaseKind;
  stop(): Promise<void>;
}

export interface StartOptions {
  dataDir: string;
  log: LauncherLog;
  prefer?: "auto" | DatabaseKind;
}

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const READY_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 5_000;
const PORT_ATTEMPTS = 3;

export async function startEmbeddedDatabase(opts: StartOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(opts.dataDir);
  await mkdir(dataDir, { recursive: true });
  const prefer = opts.prefer ?? "auto";
  const order: DatabaseKind[] = prefer === "auto" ? ["mongod", "ferretdb", "memory"] : [prefer];
  const tried: string[] = [];

  for (const kind of order) {
    const started = Date.now();
    try {
      const db = await STARTERS[kind](dataDir, opts.log);
      if (typeof db === "string") {
        tried.push(`${kind}: not available (${db})`);
        continue;
      }
      opts.log("info", "embedded database ready", { kind, uri: db.uri, ms: Date.now() - started });
      return db;
    } catch (err) {
      const reason = errorMessage(err);
      tried.push(`${kind}: ${reason}`);
      opts.log("warn", "embedded database failed to start", { kind, error: reason });
    }
  }
  throw new Error(
    `could not start an embedded database (prefer=${prefer}). Tried:\n  - ${tried.join("\n  - ")}\n` +
      "Install mongod, or Go (to build FerretDB via scripts/install-ferretdb.sh), " +
      "or set FERRETDB_BIN to a FerretDB v1 binary.",
  );
}

// Each starter returns why not when its database is simply not installed,
// and throws when it is installed but fails to start.
type Starter = (dataDir: string, log: LauncherLog) => Promise<EmbeddedDatabase | string>;

const STARTERS: Record<DatabaseKind, Starter> = {
  mongod: startMongod,
  ferretdb: startFerretDb,
  memory: startMemoryServer,
};

async function startMongod(dataDir: string): Promise<EmbeddedDatabase | string> {
  const bin = findOnPath("mongod");
  if (bin === undefined) return "no mongod on PATH";
  const dbPath = path.join(dataDir, "mongod");
  await mkdir(dbPath, { recursive: true });
  return startChild("mongod", dataDir, (port) => ({
    bin,
    args: ["--dbpath", dbPath, "--bind_ip", "127.0.0.1", "--port", String(port)],
  }));
}

async function startFerretDb(dataDir: string, log: LauncherLog): Promise<EmbeddedDatabase | string> {
  const bin = await findFerretDb(log, dataDir);
  if (bin === undefined) return "no FERRETDB_BIN, .tools/bin/ferretdb or ferretdb on PATH, and no go to build it";
  const sqliteDir = path.join(dataDir, "ferretdb", "data");
  const stateDir = path.join(dataDir, "ferretdb", "state");
  await mkdir(sqliteDir, { recursive: true });
  await mkdir(stateDir, { recursive: true });
  return startChild("ferretdb", dataDir, (port) => ({
    bin,
    args: [
      "--handler=sqlite",
      // FerretDB wants a file: URL of an existing directory, ending in "/".
      `--sqlite-url=${pathToFileURL(sqliteDir).href}/`,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${stateDir}`,
      // Default debug listener is a fixed port: parallel instances would collide.
      "--debug-addr=-",
      "--telemetry=disable",
      "--log-level=error", // at warn it dumps every failed command in full
    ],
  }));
}

async function startMemoryServer(dataDir: string): Promise<EmbeddedDatabase> {
  // Dev-only dependency: load it only when the other options are gone.
  const { MongoMemoryServer } = await import("mongodb-memory-server-core");
  const dbPath = path.join(dataDir, "memory");
  await mkdir(dbPath, { recursive: true });
  const server = await MongoMemoryServer.create({
    instance: { dbPath, ip: "127.0.0.1", port: await freePort() },
  });
  const uri = rootUri(server.getUri());
  await waitForPing(uri, READY_TIMEOUT_MS, undefined);
  let stopping: Promise<void> | undefined;
  return {
    uri,
    kind: "memory",
    stop: () => (stopping ??= server.stop({ doCleanup: false }).then(() => undefined)),
  };
}

// ---- FerretDB binary discovery ----

let installing: Promise<void> | undefined;

async function findFerretDb(log: LauncherLog, dataDir: string): Promise<string | undefined> {
  const local = path.join(REPO_ROOT, ".tools", "bin", "ferretdb");
  const fromEnv = process.env.FERRETDB_BIN;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`FERRETDB_BIN=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const found = isExecutable(local) ? local : findOnPath("ferretdb");
  if (found !== undefined) return found;
  if (findOnPath("go") === undefined) return undefined;
  // One build per process even when several databases start at once.
  installing ??= runInstallScript(log, path.join(dataDir, "ferretdb-install.log"));
  await installing;
  return isExecutable(local) ? local : undefined;
}

async function runInstallScript(log: LauncherLog, logFile: string): Promise<void> {
  const script = path.join(REPO_ROOT, "scripts", "install-ferretdb.sh");
  log("info", "building FerretDB (a minute or two the first time)", { script, logFile });
  const fd = openSync(logFile, "a");
  try {
    const child = spawn("bash", [script], { stdio: ["ignore", fd, fd] });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (c) => resolve(c));
    });
    if (code !== 0) {
      throw new Error(`${script} exited with ${code}; log tail:\n${await tail(logFile)}`);
    }
  } finally {
    closeSync(fd);
  }
}

// ---- child process management ----

interface Command {
  bin: string;
  args: string[];
}

async function startChild(
  kind: "mongod" | "ferretdb",
  dataDir: string,
  command: (port: number) => Command,
): Promise<EmbeddedDatabase> {
  const logFile = path.join(dataDir, `${kind}.log`);
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const { bin, args } = command(port);
    const child = spawnLogged(bin, args, logFile);
    const uri = `mongodb://127.0.0.1:${port}/`;
    try {
      await waitForPing(uri, READY_TIMEOUT_MS, child);
    } catch (err) {
      await child.stop();
      const logTail = await tail(logFile);
      const thisRun = logTail.slice(logTail.lastIndexOf("\n--- "));
      // The port was free when picked but another process may grab it first.
      if (attempt < PORT_ATTEMPTS && /address already in use|EADDRINUSE/i.test(thisRun)) continue;
      throw new Error(`${kind} (${bin}) did not become ready: ${errorMessage(err)}\n--- ${logFile} (tail) ---\n${logTail}`);
    }
    return { uri, kind, stop: child.stop };
  }
}

interface ManagedChild {
  process: ChildProcess;
  exited: Promise<void>;
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

function spawnLogged(bin: string, args: string[], logFile: string): ManagedChild {
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
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve()); // spawn failed: there is no process to wait for
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

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
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

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

// ---- readiness ----

async function waitForPing(uri: string, timeoutMs: number, child: ManagedChild | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = "no attempt made";
  while (Date.now() < deadline) {
    if (child !== undefined && hasExited(child.process)) {
      const { exitCode, signalCode } = child.process;
      throw new Error(`process exited early (code ${exitCode}, signal ${signalCode})`);
    }
    // A refused TCP connect is cheap to retry; the driver would instead sit
    // out a heartbeat interval before trying again.
    if (!(await acceptsConnections(uri))) {
      lastError = "connection refused";
      await sleep(50);
      continue;
    }
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1_000, connectTimeoutMS: 1_000 });
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

function freePort(): Promise<number> {
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

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

async function tail(file: string, maxBytes = 4_096): Promise<string> {
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

function rootUri(uri: string): string {
  const url = new URL(uri);
  url.pathname = "/";
  return url.toString();
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
