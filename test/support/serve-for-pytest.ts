// A server for the Python tests (test/wandb/python): an embedded database and data directory of
// its own, the real server process with its training worker, base models = the built-in tiny ones
// plus SmolLM2-135M-Instruct Q4_1 as `smollm2`, and API keys of two distinct entities. Prints one
// JSON line on stdout once everything is up:
//   {"url": "http://127.0.0.1:PORT", "keys": {"alice": "srl_…", "bob": "srl_…"},
//    "entities": {"alice": "pytest-…-a", "bob": "pytest-…-b"}, "base_models": [...],
//    "data_dir": "…", "log_file": "…/server.log"}
// and stops everything (server, database, data directory) when stdin closes (the parent went
// away) or on SIGTERM / SIGINT; also when start-up fails part way. Everything else it says goes
// to stderr. Exit code 0 after a requested stop, 1 when something failed.
//   node --import tsx test/support/serve-for-pytest.ts
// (The same pieces as test/support/isolated-server.ts, kept apart so a failed start is cleaned up.)
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { startEmbeddedDatabase, type EmbeddedDatabase } from "../../services/store/launcher.js";
import { connectDatabase, type Database } from "../../services/store/mongo.js";
import { TEST_DATABASE_TIMEOUT_MS } from "./db-timeout.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

const SMOLLM2 = resolve(import.meta.dirname, "../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
const BASE_MODELS = ["tiny-chat", "tiny-tools", "smollm2"];

interface Ready {
  url: string;
  keys: Record<string, string>;
  entities: Record<string, string>;
  base_models: string[];
  data_dir: string;
  log_file: string;
}

/** What has been started so far, stopped in reverse order. */
interface Started {
  dataDir?: string;
  database?: EmbeddedDatabase;
  db?: Database;
  server?: ServerProcess;
}

function say(message: string): void {
  process.stderr.write(`serve-for-pytest: ${message}\n`);
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

async function stopAll(started: Started): Promise<boolean> {
  let clean = true;
  const step = async (what: string, run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (error) {
      clean = false;
      say(`stopping the ${what} failed: ${describe(error)}`);
    }
  };
  const { db, server, database, dataDir } = started;
  if (db) await step("database connection", () => db.close());
  if (server) await step("server", () => server.stop());
  if (database) await step("embedded database", () => database.stop());
  if (dataDir) await step("data directory", () => rm(dataDir, { recursive: true, force: true }));
  return clean;
}

async function start(started: Started, tag: string, entities: { alice: string; bob: string }): Promise<Ready> {
  if (!existsSync(SMOLLM2)) throw new Error(`${SMOLLM2} is missing: the install step (scripts/fetch-test-models.sh) fetches it`);
  started.dataDir = await mkdtemp(join(tmpdir(), `srl-pytest-${tag}-`));
  started.database = await startEmbeddedDatabase({ dataDir: started.dataDir, log: () => {} });
  const dbName = `srl_pytest_${tag}`;
  started.server = await startServerProcess({
    DATA_DIR: started.dataDir,
    MONGODB_URI: started.database.uri,
    MONGODB_DB: dbName,
    BASE_MODELS: `smollm2=${SMOLLM2}`,
    ENGINE_THREADS: "1",
    TRAINING_WORKER: "1",
    // A real model sampled and trained on two cores: give the embedded database room.
    DATABASE_TIMEOUT_MS: "15000",
    WORKER_LEASE_MS: "10000",
  });
  started.db = await connectDatabase(started.database.uri, dbName, { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  const keys = new ApiKeys(started.db.db);
  const alice = (await keys.create(entities.alice)).key;
  const bob = (await keys.create(entities.bob)).key;
  return {
    url: started.server.url,
    keys: { alice, bob },
    entities,
    base_models: BASE_MODELS,
    data_dir: started.dataDir,
    log_file: started.server.logFile,
  };
}

async function main(): Promise<void> {
  const started: Started = {};
  let ready: Ready | undefined;
  let stopRequested: string | undefined;
  let stopping = false;
  const stopAndExit = (why: string, failed: boolean): void => {
    if (stopping) return;
    stopping = true;
    say(`stopping (${why})`);
    void stopAll(started).then((clean) => process.exit(failed || !clean ? 1 : 0));
  };
  // Installed before start-up: a request to stop while starting waits for the start to end (so
  // what it started is stopped too).
  const request = (why: string): void => {
    if (ready) stopAndExit(why, false);
    else stopRequested ??= why;
  };
  process.once("SIGTERM", () => request("SIGTERM"));
  process.once("SIGINT", () => request("SIGINT"));
  process.stdin.on("end", () => request("stdin closed"));
  process.stdin.on("error", () => request("stdin error"));
  process.stdin.resume();

  const tag = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const entities = { alice: `pytest-${tag}-a`, bob: `pytest-${tag}-b` };
  const startedAt = Date.now();
  try {
    ready = await start(started, tag, entities);
  } catch (error) {
    say(`failed to start: ${describe(error)}`);
    stopAndExit("start-up failed", true);
    return;
  }
  if (stopRequested) {
    stopAndExit(`${stopRequested} during start-up`, true);
    return;
  }
  say(`ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s at ${ready.url} (server log: ${ready.log_file})`);
  process.stdout.write(`${JSON.stringify(ready)}\n`);

  // The server process ending on its own is a failure the tests should hear of at once.
  const logFile = ready.log_file;
  started.server?.child.once("exit", (code, signal) => {
    if (stopping) return;
    say(`the server process exited by itself (code ${code}, signal ${signal}); the end of its log:`);
    void readFile(logFile, "utf8")
      .then((text) => process.stderr.write(`${text.split("\n").slice(-60).join("\n")}\n`))
      .catch((error: unknown) => say(`(no log: ${describe(error)})`))
      .finally(() => stopAndExit("the server exited", true));
  });
}

main().catch((error: unknown) => {
  say(`failed: ${describe(error)}`);
  process.exit(1);
});
