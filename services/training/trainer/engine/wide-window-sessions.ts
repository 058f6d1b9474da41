// HTTP/2 sessions to a trainer with flow-control windows sized for adapters. Node's defaults
// (64 KiB per stream and per connection) let a trainer send one window per round trip: an 8B
// model's adapter (two files of 160 MiB) took 41 s to arrive over a 4 ms round trip, and 1.2 s
// with these windows (measured through a delaying proxy; Python's gRPC client, which sizes its
// windows from the measured bandwidth, took 1.2 s too).
import type http2 from "node:http2";
import { Http2SessionManager } from "@connectrpc/connect-node";

/** What one stream, and all streams of a connection, may have in flight unread. */
export const STREAM_WINDOW_BYTES = 16 << 20;
export const SESSION_WINDOW_BYTES = 64 << 20;

class WideWindowSessionManager extends Http2SessionManager {
  private readonly widened = new WeakSet<http2.Http2Session>();

  override async request(method: string, path: string, headers: http2.OutgoingHttpHeaders, options: Omit<http2.ClientSessionRequestOptions, "signal">): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(method, path, headers, options);
    // The connection's window is not a setting: it is raised on each new session, once.
    const session = stream.session;
    if (session && !session.destroyed && !this.widened.has(session)) {
      session.setLocalWindowSize(SESSION_WINDOW_BYTES);
      this.widened.add(session);
    }
    return stream;
  }
}

/** A session manager for `createGrpcTransport` with `nodeOptions` (TLS roots and the like) kept. */
export function wideWindowSessions(url: string, nodeOptions: http2.SecureClientSessionOptions = {}): Http2SessionManager {
  return new WideWindowSessionManager(url, undefined, { ...nodeOptions, settings: { ...nodeOptions.settings, initialWindowSize: STREAM_WINDOW_BYTES } });
}
