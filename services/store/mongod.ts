// MongoDB's own server as the embedded database, where one can be had: MONGOD_BIN, `mongod` on
// the PATH, or the binary mongodb-memory-server-core keeps in its cache (downloaded once on a
// machine with internet; MONGOMS_RUNTIME_DOWNLOAD=false turns the download off). It runs as a
// one-node replica set so that change streams and transactions exist.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { MongoClient, MongoServerError } from "mongodb";
import { errorMessage, findOnPath, isExecutable, sleep } from "../core/child-process.js";
import type { DatabaseProgram, LauncherLog } from "./database-program.js";

const REPLICA_SET = "rs0";
// mongodb-memory-server-core's default; MONGOMS_DOWNLOAD_MIRROR overrides it there and here.
const DOWNLOAD_HOST = "https://fastdl.mongodb.org";
const PROBE_TIMEOUT_MS = 3_000;
const PRIMARY_TIMEOUT_MS = 30_000;
// replSetGetConfig on a member nobody has initiated yet.
const NOT_YET_INITIALIZED = 94;

/** The mongod program for `dataDir`, or why there is none. */
export async function mongodProgram(dataDir: string, log: LauncherLog): Promise<DatabaseProgram | string> {
  const bin = await findMongod(log);
  if (typeof bin !== "string") return bin.reason;
  const dbPath = mongodDataDir(dataDir);
  await mkdir(dbPath, { recursive: true });
  return {
    kind: "mongod",
    bin,
    args: (port) => ["--dbpath", dbPath, "--bind_ip", "127.0.0.1", "--port", String(port), "--replSet", REPLICA_SET],
    uri: (port) => `mongodb://127.0.0.1:${port}/?replicaSet=${REPLICA_SET}`,
    prepare: (port) => becomePrimary(port),
  };
}

/** Where mongod keeps its files under `dataDir`. */
export function mongodDataDir(dataDir: string): string {
  return path.join(dataDir, "mongod");
}

// The download is tried once per process: offline it fails in milliseconds (DNS), but there is
// no point in asking again for every database a test suite starts.
let downloaded: Promise<string | { reason: string }> | undefined;

async function findMongod(log: LauncherLog): Promise<string | { reason: string }> {
  const fromEnv = process.env.MONGOD_BIN;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`MONGOD_BIN=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const onPath = findOnPath("mongod");
  if (onPath !== undefined) return onPath;
  downloaded ??= cachedOrDownloaded(log);
  return downloaded;
}

async function cachedOrDownloaded(log: LauncherLog): Promise<string | { reason: string }> {
  try {
    const { DryMongoBinary, MongoBinary } = await import("mongodb-memory-server-core");
    const options = await DryMongoBinary.generateOptions();
    const cached = await DryMongoBinary.locateBinary(options);
    if (cached !== undefined) return cached;
    const offline = await unreachable(process.env.MONGOMS_DOWNLOAD_MIRROR || DOWNLOAD_HOST);
    if (offline !== undefined) return { reason: `no MONGOD_BIN, no mongod on PATH or in ${options.downloadDir}, and its download host is unreachable (${offline})` };
    log("info", "downloading mongod through mongodb-memory-server-core (about 100 MB, once per machine)", { version: options.version, cacheDir: options.downloadDir });
    const started = Date.now();
    const bin = await MongoBinary.getPath(options);
    log("info", "mongod downloaded", { bin, ms: Date.now() - started });
    return bin;
  } catch (err) {
    return { reason: `no MONGOD_BIN, no mongod on PATH, and no download (${errorMessage(err).split("\n")[0]})` };
  }
}

// Offline, the download itself takes seconds to give up (it retries): one request answers sooner.
async function unreachable(url: string): Promise<string | undefined> {
  try {
    await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    return undefined; // any HTTP answer will do
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
    return cause ?? errorMessage(err);
  }
}

// Initiates the one-node replica set on first start, points its one member at this start's port
// when the port changed (the replica set config is kept in the data files), and waits until
// the node is a writable primary.
async function becomePrimary(port: number): Promise<void> {
  const host = `127.0.0.1:${port}`;
  const client = new MongoClient(`mongodb://${host}/?directConnection=true`, { serverSelectionTimeoutMS: 5_000 });
  try {
    const admin = client.db("admin");
    const config = await replicaSetConfig(client);
    if (config === undefined) {
      await admin.command({ replSetInitiate: { _id: REPLICA_SET, members: [{ _id: 0, host }] } });
    } else if (config.members.length !== 1 || config.members[0]?.host !== host) {
      const member = { ...(config.members[0] ?? { _id: 0 }), host };
      await admin.command({ replSetReconfig: { ...config, version: config.version + 1, members: [member] }, force: true });
    }
    const deadline = Date.now() + PRIMARY_TIMEOUT_MS;
    for (;;) {
      const hello = await admin.command({ hello: 1 });
      if (hello.isWritablePrimary === true) return;
      if (Date.now() > deadline) throw new Error(`mongod did not become primary of replica set ${REPLICA_SET} within ${PRIMARY_TIMEOUT_MS / 1000} s`);
      await sleep(200);
    }
  } finally {
    await client.close().catch(() => undefined);
  }
}

interface ReplicaSetConfig {
  version: number;
  members: { _id: number; host: string }[];
  [field: string]: unknown;
}

async function replicaSetConfig(client: MongoClient): Promise<ReplicaSetConfig | undefined> {
  try {
    const reply = await client.db("admin").command({ replSetGetConfig: 1 });
    return reply.config as ReplicaSetConfig;
  } catch (err) {
    if (err instanceof MongoServerError && err.code === NOT_YET_INITIALIZED) return undefined;
    throw err;
  }
}
