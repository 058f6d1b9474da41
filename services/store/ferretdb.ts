// FerretDB as the embedded database (SQLite backend): found via FERRETDB_BIN, .tools/bin or the
// PATH, or built from the pinned Go module by scripts/install-ferretdb.sh when Go is there.
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { findOnPath, isExecutable, tail } from "../core/child-process.js";
import type { DatabaseProgram, LauncherLog } from "./database-program.js";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The FerretDB program for `dataDir`, or why there is none. */
export async function ferretDbProgram(dataDir: string, log: LauncherLog): Promise<DatabaseProgram | string> {
  const bin = await findFerretDb(log, dataDir);
  if (bin === undefined) return "no FERRETDB_BIN, .tools/bin/ferretdb or ferretdb on PATH, and no go to build it";
  const sqliteDir = path.join(ferretDbDataDir(dataDir), "data");
  const stateDir = path.join(ferretDbDataDir(dataDir), "state");
  await mkdir(sqliteDir, { recursive: true });
  await mkdir(stateDir, { recursive: true });
  return {
    kind: "ferretdb",
    bin,
    args: (port) => [
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
    uri: (port) => `mongodb://127.0.0.1:${port}/`,
    prepare: async () => {},
  };
}

/** Where FerretDB keeps its files under `dataDir`. */
export function ferretDbDataDir(dataDir: string): string {
  return path.join(dataDir, "ferretdb");
}

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
