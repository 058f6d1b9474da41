// What a hostile or broken client can do to the one port (HTTP/1.1 and h2c): send nothing, send
// headers a byte at a time, smuggle a second request, send targets and hosts no URL parser takes,
// open a stream and never read it. Each is refused or cut off, and the process carries on.
import { connect as connectHttp2 } from "node:http2";
import { connect, type Socket } from "node:net";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const HEADERS_TIMEOUT_MS = 1_000;
const STALL_TIMEOUT_MS = 1_500;
const IDLE_TIMEOUT_MS = 2_000;

let server: IsolatedServer;
beforeAll(async () => {
  server = await startIsolatedServer({
    name: "limits",
    entity: "limits",
    env: { HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), STALL_TIMEOUT_MS: String(STALL_TIMEOUT_MS), IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS) },
  });
});
afterAll(async () => {
  await server?.stop();
});

interface RawExchange {
  /** Everything the server sent before it closed the connection (or before `waitMs`). */
  received: string;
  closedAfterMs: number | null;
}

/** Writes `chunks` (waiting `gapMs` between them) on a plain TCP connection and collects the answer. */
function exchange(chunks: (string | Buffer)[], options: { gapMs?: number; waitMs?: number } = {}): Promise<RawExchange> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket: Socket = connect(server.server.port, "127.0.0.1");
    let received = "";
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ received, closedAfterMs: closed ? performance.now() - started : null });
    };
    socket.on("data", (data) => (received += data.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => finish(true));
    socket.on("connect", async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) return;
        socket.write(chunk);
        if (options.gapMs) await new Promise((r) => setTimeout(r, options.gapMs));
      }
    });
    timer = setTimeout(() => finish(false), options.waitMs ?? 10_000);
  });
}

const statusLines = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

async function stillServing() {
  expect(server.server.child.exitCode).toBeNull();
  expect((await fetch(`${server.server.url}/v1/preview/base-models`)).status).toBe(200);
}

describe("slow clients", () => {
  it("closes a connection that sends nothing", async () => {
    const result = await exchange([]);
    expect(result.closedAfterMs).not.toBeNull();
    expect(result.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 4_000);
    expect(result.received).toBe("");
    await stillServing();
  });

  it("answers 408 to headers trickled in too slowly, and closes", async () => {
    const trickle = ["GET /v1/preview/base-models HTTP/1.1\r\nHost: x\r\n", ...Array.from({ length: 40 }, () => "X")];
    const result = await exchange(trickle, { gapMs: 250 });
    expect(result.closedAfterMs).not.toBeNull();
    expect(result.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 5_000);
    expect(statusLines(result.received)).toEqual([408]);
    await stillServing();
  });
});

describe("requests no parser should take", () => {
  it("refuses a missing or malformed Host, and targets that are not paths, with 400 and a JSON reason", async () => {
    for (const request of [
      "POST /srl.v1.Models/Health HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
      "GET /v1/preview/base-models HTTP/1.1\r\nHost: [\r\nConnection: close\r\n\r\n",
      "POST /srl.v1.Models/Health HTTP/1.1\r\nHost: a b\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    ]) {
      const result = await exchange([request]);
      expect(statusLines(result.received), request).toEqual([400]);
      expect(result.received).toContain('{"detail":"the request needs a valid Host header (or :authority)"}');
    }
    // A whole URL as the target (absolute-form) is served like its path.
    const absolute = await exchange(["GET http://example.com/v1/preview/base-models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"]);
    expect(statusLines(absolute.received)).toEqual([200]);
    const malformed = await exchange(["GET /v1/preview/runs/%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"]);
    expect(statusLines(malformed.received)).toEqual([400]);
    await stillServing();
  });

  it("refuses a target over 8 KiB (414) and headers over 16 KiB (431)", async () => {
    const long = await exchange([`GET /v1/preview/base-models?x=${"a".repeat(9_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`]);
    expect(statusLines(long.received)).toEqual([414]);
    const big = await exchange([`GET /v1/preview/base-models HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(17_000)}\r\nConnection: close\r\n\r\n`]);
    expect(statusLines(big.received)).toEqual([431]);
    // Node's own 431 has no body; this one has the API's JSON error.
    expect(big.received).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(big.received.slice(big.received.indexOf("\r\n\r\n") + 4))).toEqual({ detail: expect.stringContaining("16 KiB") });
    // A HEAD's answer has headers only, or its client would read the body as a next response.
    const bigHead = await exchange([`HEAD /v1/preview/base-models HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(17_000)}\r\n\r\n`]);
    expect(statusLines(bigHead.received)).toEqual([431]);
    expect(bigHead.received.endsWith("\r\n\r\n")).toBe(true);
    await stillServing();
  });

  it("does not let a second request hide in a body (Content-Length with Transfer-Encoding), nor switch to h2c mid-connection", async () => {
    const hidden = `GET /v1/preview/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n\r\n`;
    const smuggled = await exchange([`POST /v1/preview/models HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${hidden}`]);
    expect(statusLines(smuggled.received)).toEqual([400]);
    expect(smuggled.received).not.toContain("limits"); // the entity whoami would have named
    expect(smuggled.closedAfterMs).not.toBeNull();
    // An Upgrade: h2c request is answered as HTTP/1.1 (no 101); an HTTP/2 preface after an
    // HTTP/1.1 request on one connection is a 400.
    const upgrade = await exchange(["GET /v1/preview/base-models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"], { waitMs: 1_000 });
    expect(statusLines(upgrade.received)).toEqual([200]);
    const preface = await exchange(["GET /v1/preview/base-models HTTP/1.1\r\nHost: x\r\n\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"], { gapMs: 300 });
    expect(statusLines(preface.received)).toEqual([200, 400]);
    expect(preface.closedAfterMs).not.toBeNull();
    await stillServing();
  });
});

describe("clients that stop reading", () => {
  const bigStream = { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], n: 8, max_tokens: 2000, ignore_eos: true, logprobs: true, top_logprobs: 20 };

  it("cuts an event stream (HTTP/1.1) whose client reads nothing, freeing what it held", async () => {
    const body = JSON.stringify({ ...bigStream, stream: true });
    const logBefore = (await readFile(server.server.logFile, "utf8")).length;
    const started = performance.now();
    const socket = connect(server.server.port, "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socket.pause();
    // The server logs each REST request when it ends: here, when it gave up on the client.
    const ended = await waitForLog(logBefore, (line) => line.msg === "request" && line.path === "/v1/chat/completions", 60_000);
    expect(performance.now() - started).toBeLessThan(60_000);
    // Now read what the client was sent: the stream stops short, without its closing [DONE].
    let received = "";
    socket.on("data", (data) => (received += data.toString()));
    await new Promise<void>((resolve) => {
      socket.on("close", () => resolve());
      socket.on("error", () => resolve());
      socket.resume();
    });
    expect(received).toContain("data: {");
    expect(received).not.toContain("data: [DONE]");
    expect(ended.status).toBe(200);
    await stillServing();
  });

  it("cancels an HTTP/2 stream (Connect) whose client reads nothing", async () => {
    const message = Buffer.from(JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "hi" }], n: 8, maxTokens: 2000, ignoreEos: true, logprobs: true, topLogprobs: 20 }));
    const envelope = Buffer.alloc(5);
    envelope.writeUInt32BE(message.length, 1);
    const session = connectHttp2(server.server.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/srl.v1.Inference/StreamChatCompletion", "content-type": "application/connect+json", authorization: `Bearer ${server.key}` });
      stream.on("error", () => undefined);
      stream.end(Buffer.concat([envelope, message]));
      stream.pause();
      const rstCode = await new Promise<number>((resolve) => stream.on("close", () => resolve(stream.rstCode ?? -1)));
      expect(rstCode).toBe(8); // NGHTTP2_CANCEL
    } finally {
      session.destroy();
    }
    await stillServing();
  });
});

describe("HTTP/2 sessions", () => {
  it("advertises a stream limit, and closes a session left idle (GOAWAY)", async () => {
    const session = connectHttp2(server.server.url);
    const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) => session.once("remoteSettings", resolve));
    expect(settings.maxConcurrentStreams).toBe(128);
    const started = performance.now();
    await new Promise<void>((resolve) => session.once("close", () => resolve()));
    expect(performance.now() - started).toBeLessThan(IDLE_TIMEOUT_MS + 5_000);
  });
});

async function waitForLog(from: number, match: (line: Record<string, unknown>) => boolean, timeoutMs: number): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = (await readFile(server.server.logFile, "utf8")).slice(from);
    for (const line of text.split("\n")) {
      if (!line.startsWith("{")) continue;
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (match(parsed)) return parsed;
    }
    if (Date.now() > deadline) throw new Error("no such log line");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
