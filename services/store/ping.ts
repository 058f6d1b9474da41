// Readiness of a database process: its port accepts connections and it answers a ping.
import { connect } from "node:net";
import { MongoClient } from "mongodb";
import { errorMessage, hasExited, sleep, type ManagedChild } from "../core/child-process.js";

export async function waitForPing(uri: string, timeoutMs: number, child: ManagedChild | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = "no attempt made";
  while (Date.now() < deadline) {
    if (child !== undefined && hasExited(child.process)) {
      throw new Error(`process exited early (${await child.exited})`);
    }
    // A refused TCP connect is cheap to retry; the driver would instead sit
    // out a heartbeat interval before trying again.
    if (!(await acceptsConnections(uri))) {
      lastError = "connection refused";
      await sleep(50);
      continue;
    }
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 1_000, connectTimeoutMS: 1_000, directConnection: true });
    try {
      await client.db("admin").command({ ping: 1 });
      return;
    } catch (err) {
      lastError = errorMessage(err);
    } finally {
      await client.close().catch(() => undefined);
    }
    await sleep(200);
  }
  throw new Error(`no answer to ping at ${uri} within ${timeoutMs / 1000} s (last error: ${lastError})`);
}

function acceptsConnections(uri: string): Promise<boolean> {
  const { hostname, port } = new URL(uri);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

