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
  /** Whether the database answers, as the driver's own monitoring last saw it. */
  reachability(): Reachability;
  /** Round-trip time of a ping in seconds; throws when the database does not answer. */
  ping(timeoutMs?: number): Promise<number>;
  close(): Promise<void>;
}

export interface Reachability {
  reachable: boolean;
  /** When it last changed (or when the connection was made). */
  since: Date;
  /** Why it is not reachable. */
  error?: string;
}

export interface ConnectOptions {
  /**
   * Every operation, retries included, fails after this (the driver's client-side operation
   * timeout): a database that stops answering makes requests fail fast with 503s instead of
   * hanging, and the driver reconnects on its own once it answers again.
   */
  timeoutMs?: number;
  /** How long start-up waits for the database to answer at all. */
  startupWaitMs?: number;
}

export async function connectDatabase(uri: string, dbName: string, options: ConnectOptions = {}): Promise<Database> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const open = async (extra: { maxPoolSize?: number }) => {
    const client = new MongoClient(uri, {
      appName: "srl",
      timeoutMS: timeoutMs,
      // Half: a retry after a pool clear selects a server afresh, and the driver (6.x) gives that
      // selection its full serverSelectionTimeoutMS rather than what is left of timeoutMS
      // (measured: 1.1 s in checkout + 2 s of selection = 3.1 s with a 2 s timeoutMS).
      serverSelectionTimeoutMS: Math.max(Math.floor(timeoutMs / 2), 50),
      connectTimeoutMS: timeoutMs,
      // The monitor's view feeds /v1/health; a failed check is repeated within half a second anyway.
      heartbeatFrequencyMS: 5_000,
      ...extra,
    });
    await connectWithin(client, options.startupWaitMs ?? 30_000);
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
  const reachability = trackReachability(client);
  const db = client.db(dbName);
  return {
    client,
    db,
    serialized,
    reachability,
    async ping(pingTimeoutMs = timeoutMs) {
      const started = performance.now();
      await db.command({ ping: 1 }, { timeoutMS: pingTimeoutMs });
      return (performance.now() - started) / 1000;
    },
    close: () => client.close(),
  };
}

/** Connects, retrying while the database does not answer yet (it may be starting), up to `waitMs`. */
async function connectWithin(client: MongoClient, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await client.connect();
      return;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * Follows the driver's server monitoring: the database is reachable while the topology has a
 * server that takes writes (a standalone, FerretDB, a replica set's primary, a mongos).
 */
function trackReachability(client: MongoClient): () => Reachability {
  let state: Reachability = { reachable: true, since: new Date() };
  client.on("topologyDescriptionChanged", (event) => {
    const reachable = [...event.newDescription.servers.values()].some((server) => server.isWritable);
    if (reachable === state.reachable) return;
    const failure = [...event.newDescription.servers.values()].find((server) => server.error)?.error;
    state = { reachable, since: new Date(), ...(!reachable ? { error: failure?.message ?? "no server takes writes" } : {}) };
  });
  return () => state;
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
