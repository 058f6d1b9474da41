// One port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, as gRPC clients use): the
// first bytes of each connection decide which server gets it.
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { createServer as createHttp1Server, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from "node:http2";

const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export type RequestHandler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

export interface Listener {
  port: number;
  /** Stops accepting connections and lets in-flight requests finish for up to `graceMs`. */
  close(graceMs: number): Promise<void>;
}

export async function listen(handler: RequestHandler, host: string, port: number): Promise<Listener> {
  const http1 = createHttp1Server({ keepAliveTimeout: 65_000, requestTimeout: 0 }, handler);
  const http2 = createHttp2Server({}, handler);
  // http.Server tracks its connections (needed by closeIdleConnections) from its 'listening' event;
  // this one never listens itself, the net server hands it sockets.
  http1.emit("listening");
  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  http2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });

  const server: NetServer = createNetServer((socket) => {
    // Streams write many small chunks (SSE, gRPC messages): without this, Nagle's algorithm holds
    // each one until the previous is acknowledged, adding tens of milliseconds per token.
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.once("readable", () => {
      const head: Buffer | null = socket.read(Math.min(HTTP2_PREFACE.length, socket.readableLength)) ?? socket.read();
      if (!head) return socket.destroy();
      socket.unshift(head);
      const isHttp2 = HTTP2_PREFACE.subarray(0, head.length).equals(head.subarray(0, HTTP2_PREFACE.length));
      (isHttp2 ? http2 : http1).emit("connection", socket);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const boundPort = typeof address === "object" && address ? address.port : port;

  return {
    port: boundPort,
    async close(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      http1.closeIdleConnections();
      for (const session of sessions) session.close();
      const deadline = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      deadline.unref();
      // Keep-alive HTTP/1.1 connections finish their current request, then close.
      http1.on("request", (_req: IncomingMessage, res: ServerResponse) => res.setHeader("connection", "close"));
      const idle = setInterval(() => http1.closeIdleConnections(), 100);
      await closed;
      clearInterval(idle);
      clearTimeout(deadline);
    },
  };
}
