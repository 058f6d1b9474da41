// Starts the local MongoDB-compatible database for development and tests, supervised (restarted
// if it exits): MongoDB's own mongod where one can be had, else FerretDB (SQLite backend, built
// from the pinned Go module). A data directory stays with the kind that wrote it, so a mongod that
// becomes available later does not hide the data FerretDB holds. Returns a URI without a database
// name; which databases to use is the caller's business.
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { errorMessage } from "../core/child-process.js";
import type { DatabaseKind, DatabaseProgram, LauncherLog } from "./database-program.js";
import { ferretDbDataDir, ferretDbProgram } from "./ferretdb.js";
import { mongodDataDir, mongodProgram } from "./mongod.js";
import { startSupervised, type SupervisedDatabase } from "./supervisor.js";

export type { DatabaseKind, LauncherLog } from "./database-program.js";
export type EmbeddedDatabase = SupervisedDatabase;

export interface StartOptions {
  dataDir: string;
  log: LauncherLog;
  /** "auto": the kind already holding this data directory, else mongod, else FerretDB. */
  prefer?: "auto" | DatabaseKind;
  /** The first restart after an unexpected exit waits this long (then doubling up to 30 s). */
  restartDelayMs?: number;
}

const DEFAULT_RESTART_DELAY_MS = 500;
const KIND_FILE = "database-kind";

const PROGRAMS: Record<DatabaseKind, (dataDir: string, log: LauncherLog) => Promise<DatabaseProgram | string>> = {
  mongod: mongodProgram,
  ferretdb: ferretDbProgram,
};

const WHAT_IT_MEANS: Record<DatabaseKind, string> = {
  mongod:
    "a one-node replica set (change streams, transactions); extra training workers (npm run worker) can share it",
  ferretdb:
    "FerretDB on SQLite: this service serializes its own operations, but concurrent updates from other processes are not atomic, so run extra training workers against a real MongoDB (MONGODB_URI)",
};

export async function startEmbeddedDatabase(opts: StartOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(opts.dataDir);
  await mkdir(dataDir, { recursive: true });
  const prefer = opts.prefer ?? "auto";
  const existing = await existingKind(dataDir);
  const order: DatabaseKind[] = prefer !== "auto" ? [prefer] : existing !== undefined ? [existing] : ["mongod", "ferretdb"];
  if (prefer !== "auto" && existing !== undefined && existing !== prefer) {
    opts.log("warn", `the data directory holds ${existing} data, which ${prefer} cannot read: starting an empty ${prefer} database beside it`, { dataDir });
  }
  const tried: string[] = [];

  for (const kind of order) {
    const started = Date.now();
    try {
      const program = await PROGRAMS[kind](dataDir, opts.log);
      if (typeof program === "string") {
        tried.push(`${kind}: not available (${program})`);
        continue;
      }
      const db = await startSupervised(program, { dataDir, log: opts.log, restartDelayMs: opts.restartDelayMs ?? DEFAULT_RESTART_DELAY_MS });
      await writeFile(path.join(dataDir, KIND_FILE), kind + "\n");
      opts.log("info", `embedded database ready: ${kind}, ${WHAT_IT_MEANS[kind]}`, { kind, uri: db.uri, ms: Date.now() - started, unavailable: tried });
      return db;
    } catch (err) {
      const reason = errorMessage(err);
      tried.push(`${kind}: ${reason}`);
      opts.log("warn", "embedded database failed to start", { kind, error: reason });
    }
  }
  const sticky =
    existing !== undefined && prefer === "auto"
      ? `The data directory ${dataDir} holds ${existing} data (${KIND_FILE}); make ${existing} available, ` +
        `or set EMBEDDED_DATABASE to the other kind to start an empty database beside it.\n`
      : "";
  throw new Error(
    `could not start an embedded database (prefer=${prefer}). Tried:\n  - ${tried.join("\n  - ")}\n${sticky}` +
      "Install mongod (or set MONGOD_BIN), or Go (to build FerretDB via scripts/install-ferretdb.sh), " +
      "or set FERRETDB_BIN to a FerretDB v1 binary.",
  );
}

// The kind that wrote this data directory: recorded at each start, or (for directories from
// before the record) recognised by its files.
async function existingKind(dataDir: string): Promise<DatabaseKind | undefined> {
  const recorded = (await readFile(path.join(dataDir, KIND_FILE), "utf8").catch(() => "")).trim();
  if (recorded === "mongod" || recorded === "ferretdb") return recorded;
  if (await hasFiles(path.join(ferretDbDataDir(dataDir), "data"))) return "ferretdb";
  if (await hasFiles(mongodDataDir(dataDir))) return "mongod";
  return undefined;
}

async function hasFiles(dir: string): Promise<boolean> {
  return (await readdir(dir).catch(() => [])).length > 0;
}
