// The MongoDB connection of a process. Collections belong to the services that use them; each
// service module exports its own index set, which start-up applies through ensureIndexes.
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { MongoClient, MongoServerError, type Collection, type Db, type Document, type Filter, type UpdateFilter } from "mongodb";

export interface Database {
  client: MongoClient;
  db: Db;
  /** True on FerretDB: one connection, operations one at a time (see connectDatabase). */
  serialized: boolean;
  /** Round-trip time of a ping in seconds; throws when the database does not answer. */
  ping(timeoutMs?: number): Promise<number>;
  close(): Promise<void>;
}

export async function connectDatabase(uri: string, dbName: string): Promise<Database> {
  const open = async (options: { maxPoolSize?: number }) => {
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000, appName: "srl", ...options });
    await client.connect();
    return client;
  };
  let client = await open({});
  const serialized = !/[?&]maxPoolSize=/i.test(uri) && (await isFerretDb(client));
  if (serialized) {
    // FerretDB 1.x (SQLite backend) loses concurrent updates of one document that arrive over
    // several connections (measured: 100 concurrent $inc -> 8; findOneAndUpdate hands out the same
    // counter value twice). One connection per process serializes this process's operations, which
    // makes each atomic again (and is faster: no SQLite lock contention). Processes sharing one
    // FerretDB can still race: several workers or servers need MongoDB.
    await client.close();
    client = await open({ maxPoolSize: 1 });
  }
  const db = client.db(dbName);
  return {
    client,
    db,
    serialized,
    async ping(timeoutMs = 2_000) {
      const started = performance.now();
      await db.command({ ping: 1 }, { timeoutMS: timeoutMs });
      return (performance.now() - started) / 1000;
    },
    close: () => client.close(),
  };
}

/** A duplicate-key error, as MongoDB (11000) and FerretDB (error 1 for updates) report it. */
export function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && (error.code === 11000 || /duplicate/i.test(error.message));
}

/**
 * An upsert that tolerates a concurrent one creating the same document: the loser's insert
 * collides, the document exists now, and the update is applied to it ($setOnInsert then has no
 * effect).
 */
export async function upsertTolerant<T extends Document>(collection: Collection<T>, filter: Filter<T>, update: UpdateFilter<T>): Promise<void> {
  try {
    await collection.updateOne(filter, update, { upsert: true });
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    await collection.updateOne(filter, update);
  }
}

async function isFerretDb(client: MongoClient): Promise<boolean> {
  const info = await client.db("admin").command({ buildInfo: 1 });
  return typeof info.ferretdbVersion === "string";
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
