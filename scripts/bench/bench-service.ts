// The service as the benchmarks run it: a data directory and embedded database of its own, the
// server process (quiet logs, `env` on top), and one API key; stop() removes all of it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { startEmbeddedDatabase } from "../../services/store/launcher.js";
import { connectDatabase } from "../../services/store/mongo.js";
import { startServerProcess } from "../../test/support/server-process.js";

export interface BenchService {
  url: string;
  key: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** `env` may depend on the data directory (a model written there first). */
export async function startBenchService(name: string, env: Record<string, string> | ((dataDir: string) => Promise<Record<string, string>>)): Promise<BenchService> {
  const dataDir = await mkdtemp(join(tmpdir(), `srl-bench-${name}-`));
  const database = await startEmbeddedDatabase({ dataDir, log: () => {} });
  const server = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: database.uri, MONGODB_DB: "bench", LOG_LEVEL: "warn", ...(typeof env === "function" ? await env(dataDir) : env) });
  const stop = async () => {
    await server.stop();
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const db = await connectDatabase(database.uri, "bench");
    const key = (await new ApiKeys(db.db).create("bench")).key;
    await db.close();
    return { url: server.url, key, dataDir, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
