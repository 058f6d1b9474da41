// The MongoDB connection of a process. Collections belong to the services that use them; each
// service module exports its own index set, which start-up applies through ensureIndexes.
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MongoClient, type Db } from "mongodb";

export interface Database {
  client: MongoClient;
  db: Db;
  /** Round-trip time of a ping in seconds; throws when the database does not answer. */
  ping(timeoutMs?: number): Promise<number>;
  close(): Promise<void>;
}

export async function connectDatabase(uri: string, dbName: string): Promise<Database> {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 10_000,
    appName: "srl",
  });
  await client.connect();
  const db = client.db(dbName);
  return {
    client,
    db,
    async ping(timeoutMs = 2_000) {
      const started = performance.now();
      await db.command({ ping: 1 }, { timeoutMS: timeoutMs });
      return (performance.now() - started) / 1000;
    },
    close: () => client.close(),
  };
}

export interface IndexOwner {
  ensureIndexes(): Promise<void>;
}

export async function ensureIndexes(owners: IndexOwner[]): Promise<void> {
  for (const owner of owners) await owner.ensureIndexes();
}

// While a server runs on the embedded database, DATA_DIR/database-uri names it, so commands such as
// `npm run keys` use that database instead of starting a second one on the same files.
const uriFile = (dataDir: string) => join(dataDir, "database-uri");

export async function publishDatabaseUri(dataDir: string, uri: string): Promise<() => Promise<void>> {
  await writeFile(uriFile(dataDir), uri + "\n");
  return () => rm(uriFile(dataDir), { force: true });
}

export async function runningDatabaseUri(dataDir: string): Promise<string | undefined> {
  const uri = (await readFile(uriFile(dataDir), "utf8").catch(() => "")).trim();
  if (!uri) return undefined;
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1_000 });
  try {
    await client.db("admin").command({ ping: 1 });
    return uri;
  } catch {
    return undefined;
  } finally {
    await client.close();
  }
}
