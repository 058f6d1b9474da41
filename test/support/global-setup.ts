// One embedded database and one real server for the end-to-end suites (each file creates its own
// API keys and entities, so files do not see each other's data). It runs no training worker, so
// jobs stay as the tests put them; the training suites start servers with workers of their own.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startEmbeddedDatabase } from "../../services/store/launcher.js";
import { startServerProcess } from "./server-process.js";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    mongoUri: string;
    mongoDb: string;
    dataDir: string;
  }
}

/**
 * The test files share this server and many run at once: the request rate is limited (the path
 * every request takes) but far above what they send together, so no test sees another's 429s.
 */
const SHARED_SERVER_LIMITS = { ENTITY_REQUESTS_PER_SECOND: "2000", ENTITY_REQUEST_BURST: "4000" };

export default async function setup(project: TestProject) {
  const dataDir = await mkdtemp(join(tmpdir(), "srl-test-"));
  const database = await startEmbeddedDatabase({
    dataDir,
    log: (level, msg, fields) => {
      if (level !== "info") process.stderr.write(`[database] ${level}: ${msg} ${JSON.stringify(fields ?? {})}\n`);
    },
  });
  const mongoDb = "srl_test";
  const server = await startServerProcess({ MONGODB_URI: database.uri, MONGODB_DB: mongoDb, DATA_DIR: dataDir, LOG_LEVEL: "info", ENGINE_THREADS: "1", TRAINING_WORKER: "0", ...SHARED_SERVER_LIMITS });
  project.provide("baseUrl", server.url);
  project.provide("mongoUri", database.uri);
  project.provide("mongoDb", mongoDb);
  project.provide("dataDir", dataDir);
  return async () => {
    await server.stop();
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
