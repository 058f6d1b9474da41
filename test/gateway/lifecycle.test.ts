// The process as an operator runs it: first start on the embedded database prints one key, the
// system check turns 503 when the database goes away, SIGTERM stops it cleanly.
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { startEmbeddedDatabase } from "../../services/store/launcher.js";
import { connectDatabase } from "../../services/store/mongo.js";
import { TEST_DATABASE_TIMEOUT_MS } from "../support/db-timeout.js";
import { startServerProcess } from "../support/server-process.js";

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "srl-lifecycle-"));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const portClosed = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(false)));
    socket.once("error", () => resolve(true));
  });

describe("embedded default", () => {
  it("creates and prints one API key on the first start only, and the key works", async () => {
    const dataDir = await tempDir();
    const first = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: "", BOOTSTRAP_ENTITY: "laptop" }, "first");
    try {
      const key = /(srl_[A-Za-z0-9_-]{43})/.exec(first.stdout())?.[1];
      expect(key).toBeDefined();
      const whoami = await fetch(`${first.url}/v1/preview/whoami`, { headers: { authorization: `Bearer ${key}` } });
      expect(await whoami.json()).toEqual({ entity: "laptop", key_prefix: key?.slice(0, 12) });
    } finally {
      expect(await first.stop()).toBe(0);
    }
    const second = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: "" }, "second");
    try {
      expect(second.stdout()).not.toMatch(/srl_[A-Za-z0-9_-]{43}/);
      expect((await fetch(`${second.url}/v1/health`)).status).toBe(200);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });
});

describe("request body limit", () => {
  it("refuses bodies over BODY_LIMIT_BYTES with 413 (REST) and resource_exhausted (Connect)", async () => {
    const dataDir = await tempDir();
    const database = await startEmbeddedDatabase({ dataDir, log: () => {} });
    const server = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: database.uri, MONGODB_DB: "srl_limit", BODY_LIMIT_BYTES: "2048" });
    try {
      const database2 = await connectDatabase(database.uri, "srl_limit", { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
      const key = (await new ApiKeys(database2.db).create("limit")).key;
      await database2.close();
      const big = JSON.stringify({ project: "p", name: "x".repeat(4096), base_model: "m" });
      const tooLarge = await fetch(`${server.url}/v1/preview/models`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: big,
      });
      expect(tooLarge.status).toBe(413);
      expect(await tooLarge.json()).toEqual({ detail: `request body of ${big.length} bytes exceeds the limit of 2048 bytes` });
      // Authentication comes first: an unauthenticated client learns nothing about limits.
      const anonymous = await fetch(`${server.url}/v1/preview/models`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
      expect(anonymous.status).toBe(401);
      const health = await fetch(`${server.url}/srl.v1.Models/Health`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
      expect(health.status).toBe(429);
      expect(((await health.json()) as { code: string }).code).toBe("resource_exhausted");
    } finally {
      await server.stop();
      await database.stop();
    }
  });
});

describe("dependencies and shutdown", () => {
  it("answers 503 from the system check while the database is down, and stops cleanly on SIGTERM", async () => {
    const dataDir = await tempDir();
    const database = await startEmbeddedDatabase({ dataDir, log: () => {} });
    const server = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: database.uri, MONGODB_DB: "srl_lifecycle" });
    try {
      expect((await fetch(`${server.url}/v1/system-check`)).status).toBe(200);
      await database.stop();
      const down = await fetch(`${server.url}/v1/system-check`);
      expect(down.status).toBe(503);
      const report = (await down.json()) as { api: boolean; database: { success: boolean; errors: string[] }; cpu_queue: { success: boolean } };
      expect(report.api).toBe(true);
      expect(report.database.success).toBe(false);
      expect(report.database.errors.length).toBeGreaterThan(0);
      expect(report.cpu_queue.success).toBe(false);
      // Liveness does not depend on the database.
      expect((await fetch(`${server.url}/v1/health`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
      await database.stop();
    }
    expect(await portClosed(server.port)).toBe(true);
  });
});
