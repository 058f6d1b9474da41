import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SESSION_WINDOW_BYTES, STREAM_WINDOW_BYTES, wideWindowSessions } from "./wide-window-sessions.js";

describe("HTTP/2 sessions to a trainer", () => {
  let server: http2.Http2Server;
  let url = "";
  const sessions: http2.ServerHttp2Session[] = [];
  const seen: { streamWindow: number | undefined; connectionWindow: number | undefined }[] = [];

  beforeAll(async () => {
    server = http2.createServer();
    server.on("session", (session) => sessions.push(session));
    server.on("stream", (stream) => {
      // What the trainer sees of the client: how much it may send before the client reads.
      setTimeout(() => {
        seen.push({ streamWindow: stream.session?.remoteSettings.initialWindowSize, connectionWindow: stream.session?.state.remoteWindowSize });
        stream.respond({ ":status": 200 });
        stream.end(Buffer.alloc(1 << 20));
      }, 50);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const session of sessions) session.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("let the trainer send megabytes per round trip, on every stream of the connection", async () => {
    const client = wideWindowSessions(url);
    for (let i = 0; i < 2; i++) {
      const stream = await client.request("POST", "/srl.trainer.v1.Trainer/Describe", {}, {});
      stream.end();
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).byteLength).toBe(1 << 20);
      // Node's default is 64 KiB; what was read is given back in WINDOW_UPDATEs as it goes.
      expect(stream.session?.state.localWindowSize).toBeGreaterThan(SESSION_WINDOW_BYTES / 2);
    }
    expect(seen.map((s) => s.streamWindow)).toEqual([STREAM_WINDOW_BYTES, STREAM_WINDOW_BYTES]);
    for (const s of seen) expect(s.connectionWindow).toBeGreaterThan(SESSION_WINDOW_BYTES / 2);
  });
});
