// One port for HTTP/1.1 and cleartext HTTP/2 (h2c with prior knowledge, as gRPC clients use): the
// first bytes of each connection decide which server gets it. Slow and stalled clients are cut off
// here, for both protocols (see ConnectionLimits).
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { createServer as createHttp1Server, STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import {
  constants as http2Constants,
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type ServerHttp2Stream,
} from "node:http2";

const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export type RequestHandler = (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => void;

export interface ConnectionLimits {
  /** A new connection must send its first bytes, and an HTTP/1.1 request its headers, within this. */
  headersTimeoutMs: number;
  /** An HTTP/1.1 request must arrive whole (headers and body) within this. */
  requestTimeoutMs: number;
  /** An idle connection (keep-alive, or an HTTP/2 session with no open stream) is closed after this. */
  idleTimeoutMs: number;
  /** A response the client has taken nothing of for this long is cut (a client that never reads). */
  stallTimeoutMs: number;
}

/** Request headers (with the request line) of one request, both protocols. */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Streams one HTTP/2 session may have open at once. */
export const MAX_CONCURRENT_STREAMS = 128;

export interface Listener {
  port: number;
  /** Stops accepting connections and lets in-flight requests finish for up to `graceMs`. */
  close(graceMs: number): Promise<void>;
}

export async function listen(handler: RequestHandler, host: string, port: number, limits: ConnectionLimits): Promise<Listener> {
  // Sockets whose response is under way: an error in a pipelined request behind it must not
  // write a second response into the middle of the first.
  const answering = new WeakSet<Socket>();
  // A connection's first bytes, until its first request is parsed: they start that request.
  const firstBytes = new WeakMap<Socket, Buffer>();
  const http1 = createHttp1Server(
    {
      keepAliveTimeout: limits.idleTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      maxHeaderSize: MAX_HEADER_BYTES,
      // Node checks the two timeouts above on this interval.
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    (req: IncomingMessage, res: ServerResponse) => {
      answering.add(req.socket);
      firstBytes.delete(req.socket);
      res.once("close", () => answering.delete(req.socket));
      handler(req, res);
    },
  );
  // Requests Node's parser refuses (too large, malformed, too slow) get the API's JSON error body
  // rather than Node's empty one.
  http1.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === "ECONNRESET" || !socket.writable || answering.has(socket)) return socket.destroy();
    const { status, detail } = clientErrorAnswer(error.code);
    const body = JSON.stringify({ detail });
    // A HEAD request's answer has no body (its client would read one as the next response). The
    // failed request starts the connection's bytes unless an earlier request was answered on it;
    // then the parser's current chunk is the best guess there is.
    const raw = (error as { rawPacket?: unknown }).rawPacket;
    const start = firstBytes.get(socket) ?? (Buffer.isBuffer(raw) ? raw : undefined);
    const isHead = start?.subarray(0, 5).toString("latin1") === "HEAD ";
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${isHead ? "" : body}`,
    );
  });
  const http2 = createHttp2Server(
    {
      settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListSize: MAX_HEADER_BYTES },
    },
    handler,
  );
  // http.Server tracks its connections (needed by closeIdleConnections) from its 'listening' event;
  // this one never listens itself, the net server hands it sockets.
  http1.emit("listening");
  // A socket without pending output that goes quiet is fine (keep-alive, a quiet event stream);
  // one whose output has not moved for stallTimeoutMs belongs to a client that stopped reading.
  // (With a listener here, Node no longer destroys every socket that times out.)
  http1.on("timeout", (socket: Socket) => {
    if (socket.writableLength > 0) socket.destroy();
  });
  const sessions = new Set<Http2Session>();
  http2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    session.on("error", () => undefined); // the session is closed; its streams see their own errors
    watchIdleSession(session, limits.idleTimeoutMs);
  });
  http2.on("stream", (stream: ServerHttp2Stream) => watchStalledStream(stream, limits.stallTimeoutMs));

  const sockets = new Set<Socket>();
  const server: NetServer = createNetServer((socket) => {
    // Streams write many small chunks (SSE, gRPC messages): without this, Nagle's algorithm holds
    // each one until the previous is acknowledged, adding tens of milliseconds per token.
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    // A reset before the protocol is known would otherwise be an unhandled 'error' event.
    socket.on("error", () => socket.destroy());
    // A connection that sends nothing holds a socket for nothing.
    socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy());
    socket.once("readable", () => {
      const head: Buffer | null = socket.read(Math.min(HTTP2_PREFACE.length, socket.readableLength)) ?? socket.read();
      if (!head) return socket.destroy();
      socket.unshift(head);
      socket.setTimeout(0);
      socket.removeAllListeners("timeout");
      const isHttp2 = HTTP2_PREFACE.subarray(0, head.length).equals(head.subarray(0, HTTP2_PREFACE.length));
      if (isHttp2) http2.emit("connection", socket);
      else {
        firstBytes.set(socket, Buffer.from(head));
        http1.emit("connection", socket);
        socket.setTimeout(limits.stallTimeoutMs);
      }
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

function clientErrorAnswer(code: string | undefined): { status: number; detail: string } {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, detail: `the request line and headers exceed ${MAX_HEADER_BYTES / 1024} KiB` };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { status: 413, detail: "chunk extensions too large" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, detail: "the request did not arrive in time" };
    default:
      return { status: 400, detail: `malformed HTTP/1.1 request${code ? ` (${code})` : ""}` };
  }
}

/** Closes a session that has had no open stream for `idleMs` (gRPC clients reconnect on GOAWAY). */
function watchIdleSession(session: Http2Session, idleMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = open === 0 ? setTimeout(() => session.close(), idleMs) : undefined;
    timer?.unref();
  };
  session.on("stream", (stream: ServerHttp2Stream) => {
    open++;
    arm();
    stream.once("close", () => {
      open--;
      arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}

/** Cancels a stream whose buffered output the client has not taken for `stallMs` (flow control). */
function watchStalledStream(stream: ServerHttp2Stream, stallMs: number): void {
  stream.setTimeout(stallMs, () => {
    if (stream.writableLength > 0) stream.close(http2Constants.NGHTTP2_CANCEL);
  });
}
