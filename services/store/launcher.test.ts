import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, it, expect } from "vitest";
import { GridFSBucket, MongoClient, MongoServerError } from "mongodb";
import { findProcess, isRunning } from "../../test/support/processes.js";
import { startEmbeddedDatabase, type EmbeddedDatabase, type LauncherLog } from "./launcher.js";

// The first run may build FerretDB from source (~75 s on 2 cores).
const START_TIMEOUT_MS = 240_000;

const log: LauncherLog = (level, msg, fields) => {
  if (level !== "info") console.warn(`[launcher ${level}] ${msg}`, fields ?? "");
};

async function withDatabase<T>(fn: (db: EmbeddedDatabase) => Promise<T>): Promise<T> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "store-launcher-"));
  const db = await startEmbeddedDatabase({ dataDir, log });
  try {
    return await fn(db);
  } finally {
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function portOf(uri: string): number {
  return Number(new URL(uri).port);
}

function isPortOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

describe("startEmbeddedDatabase", () => {
  it(
    "serves CRUD, unique indexes, findOneAndUpdate and GridFS, then stops",
    async () => {
      let port = 0;
      await withDatabase(async (db) => {
        expect(db.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/(\?replicaSet=rs0)?$/);
        port = portOf(db.uri);
        const client = await MongoClient.connect(db.uri);
        try {
          const mdb = client.db("launcher_test");

          const items = mdb.collection<{ _id: string; n: number }>("items");
          await items.insertOne({ _id: "a", n: 1 });
          expect(await items.findOne({ _id: "a" })).toEqual({ _id: "a", n: 1 });

          const users = mdb.collection<{ tenant: string; email: string }>("users");
          await users.createIndex({ tenant: 1, email: 1 }, { unique: true });
          await users.insertOne({ tenant: "t", email: "x@example.com" });
          const duplicate = await users.insertOne({ tenant: "t", email: "x@example.com" }).catch((e: unknown) => e);
          expect(duplicate).toBeInstanceOf(MongoServerError);
          expect((duplicate as MongoServerError).code).toBe(11000);

          const after = await items.findOneAndUpdate({ _id: "a" }, { $inc: { n: 5 } }, { returnDocument: "after" });
          expect(after).toEqual({ _id: "a", n: 6 });

          const bucket = new GridFSBucket(mdb);
          const payload = randomBytes(1024 * 1024 + 17);
          const upload = bucket.openUploadStream("blob.bin");
          await pipeline(Readable.from([payload]), upload);
          const downloaded = await collect(bucket.openDownloadStream(upload.id));
          expect(downloaded.length).toBe(payload.length);
          expect(downloaded.equals(payload)).toBe(true);
        } finally {
          await client.close();
        }
      });
      expect(await isPortOpen(port)).toBe(false);
    },
    START_TIMEOUT_MS,
  );

  it(
    "runs two instances side by side, started concurrently",
    async () => {
      const dataDirs = await Promise.all([0, 1].map(() => mkdtemp(path.join(tmpdir(), "store-launcher-"))));
      const started = await Promise.allSettled(dataDirs.map((dataDir) => startEmbeddedDatabase({ dataDir, log })));
      const dbs = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      try {
        for (const r of started) if (r.status === "rejected") throw r.reason;
        expect(new Set(dbs.map((db) => db.uri)).size).toBe(2);
        const clients = await Promise.all(dbs.map((db) => MongoClient.connect(db.uri)));
        try {
          const names = ["first", "second"];
          const collections = clients.map((c) => c.db("launcher_test").collection<{ _id: string }>("which"));
          await Promise.all(collections.map((coll, i) => coll.insertOne({ _id: names[i] ?? "" })));
          const seen = await Promise.all(collections.map((coll) => coll.find().toArray()));
          expect(seen).toEqual([[{ _id: "first" }], [{ _id: "second" }]]);
        } finally {
          await Promise.all(clients.map((c) => c.close()));
        }
      } finally {
        await Promise.all(dbs.map((db) => db.stop()));
        await Promise.all(dataDirs.map((d) => rm(d, { recursive: true, force: true })));
      }
      for (const db of dbs) expect(await isPortOpen(portOf(db.uri))).toBe(false);
    },
    START_TIMEOUT_MS,
  );

  it(
    "restarts a database killed with SIGKILL on the same port and data, and stops supervising on stop()",
    async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), "store-launcher-"));
      const logged: string[] = [];
      const db = await startEmbeddedDatabase({ dataDir, restartDelayMs: 100, log: (level, msg) => logged.push(`${level} ${msg}`) });
      try {
        const program = db.kind === "mongod" ? "mongod" : "ferretdb";
        const client = new MongoClient(db.uri, { serverSelectionTimeoutMS: 20_000 });
        try {
          const items = client.db("launcher_test").collection<{ _id: string; n: number }>("items");
          await items.insertOne({ _id: "before", n: 1 });
          const pid = findProcess(program, dataDir);
          process.kill(pid, "SIGKILL");
          const deadline = Date.now() + 60_000;
          while (db.status().restarts < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
          expect(db.status()).toMatchObject({ kind: db.kind, state: "running", restarts: 1 });
          expect(db.status().lastError).toBeUndefined();
          expect(isRunning(pid)).toBe(false);
          expect(findProcess(program, dataDir)).not.toBe(pid);
          // The same client, the same URI: the driver reconnects by itself.
          expect(await items.findOne({ _id: "before" })).toEqual({ _id: "before", n: 1 });
          await items.insertOne({ _id: "after", n: 2 });
          expect(logged).toContain("error embedded database exited");
          expect(logged).toContain("info embedded database restarted");
        } finally {
          await client.close();
        }
        // Killed again and stopped before the (now longer) backoff runs out: nothing is restarted.
        const pid = findProcess(program, dataDir);
        process.kill(pid, "SIGKILL");
        while (db.status().state === "running") await new Promise((r) => setTimeout(r, 20));
        expect(db.status()).toMatchObject({ state: "restarting", lastError: expect.stringContaining("SIGKILL") });
        await db.stop();
        expect(db.status().state).toBe("stopped");
        await new Promise((r) => setTimeout(r, 500));
        expect(() => findProcess(program, dataDir)).toThrow();
      } finally {
        await db.stop();
        await rm(dataDir, { recursive: true, force: true });
      }
    },
    START_TIMEOUT_MS,
  );
});
