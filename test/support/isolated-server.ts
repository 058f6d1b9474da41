// A server of a test file's own (its own embedded database and data directory), for suites that
// change server settings or need a training worker; with one API key of `entity`.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { startEmbeddedDatabase, type EmbeddedDatabase } from "../../services/store/launcher.js";
import { connectDatabase, type Database } from "../../services/store/mongo.js";
import { TEST_DATABASE_TIMEOUT_MS } from "./db-timeout.js";
import { startServerProcess, type ServerProcess } from "./server-process.js";

export interface IsolatedServer {
  dataDir: string;
  database: EmbeddedDatabase;
  /** The server's database, for reading what no API shows. */
  db: Database;
  server: ServerProcess;
  key: string;
  /** Stops the server (or finds it dead) and starts it again on the same database and data directory. */
  restart(env?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

export async function startIsolatedServer(options: { name: string; entity: string; env?: Record<string, string> }): Promise<IsolatedServer> {
  const dataDir = await mkdtemp(join(tmpdir(), `srl-${options.name}-`));
  const database = await startEmbeddedDatabase({ dataDir, log: () => {} });
  const dbName = `srl_${options.name}`;
  const baseEnv = { DATA_DIR: dataDir, MONGODB_URI: database.uri, MONGODB_DB: dbName, ENGINE_THREADS: "1" };
  const server = await startServerProcess({ ...baseEnv, ...options.env });
  const db = await connectDatabase(database.uri, dbName, { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  const key = (await new ApiKeys(db.db).create(options.entity)).key;
  const isolated: IsolatedServer = {
    dataDir,
    database,
    db,
    server,
    key,
    async restart(env) {
      await isolated.server.stop();
      isolated.server = await startServerProcess({ ...baseEnv, ...(env ?? options.env) });
    },
    async stop() {
      await db.close();
      await isolated.server.stop();
      await database.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return isolated;
}
