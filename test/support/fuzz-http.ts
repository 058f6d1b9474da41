// A raw HTTP/1.1 client for the fuzz suite: node:http sends the target, headers and body exactly as
// given (fetch would normalise `/../` and refuse bytes in header values), and answers are read
// whatever they are. Also a small HTTP/2 client for hand-made gRPC frames, and a bounded-concurrency
// runner.
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect as connectHttp2, constants as h2, type ClientHttp2Session } from "node:http2";
import { decodeSegment } from "../../services/gateway/rest/request-target.js";

export interface RawRequest {
  method: string;
  /** The request target, sent as is (already percent-encoded where it should be). */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Stop reading after the headers of a 2xx event stream (watches that never end). */
  cutEventStream?: boolean;
  /** On a connection of its own (a request whose Content-Length says more than it sends). */
  freshConnection?: boolean;
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body (at most `MAX_KEPT` bytes of it). */
  body: Buffer;
  /** The whole body's length, even past MAX_KEPT. */
  length: number;
  /** Set when no complete HTTP answer arrived (connection refused or reset, timeout). */
  error?: string;
  /** True when we stopped reading on purpose (cutEventStream). */
  cut?: boolean;
}

const MAX_KEPT = 4 * 2 ** 20;
export const REQUEST_TIMEOUT_MS = 60_000;

export class RawHttp {
  private agent = new Agent({ keepAlive: true, maxSockets: 8 });
  constructor(private readonly origin: () => { host: string; port: number }) {}

  send(req: RawRequest): Promise<RawResponse> {
    const { host, port } = this.origin();
    return new Promise<RawResponse>((resolve) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const done = (res: RawResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(res);
      };
      const headers: Record<string, string> = { ...req.headers };
      if (req.body !== undefined) headers["content-length"] ??= String(req.body.length);
      let outgoing: ReturnType<typeof httpRequest>;
      try {
        outgoing = httpRequest({ host, port, method: req.method, path: req.target, headers, agent: req.freshConnection ? false : this.agent, insecureHTTPParser: false });
      } catch (error) {
        done({ status: -1, headers: {}, body: Buffer.alloc(0), length: 0, error: `the client refused to send it: ${String(error)}` });
        return;
      }
      timer = setTimeout(() => {
        outgoing.destroy();
        done({ status: 0, headers: {}, body: Buffer.alloc(0), length: 0, error: `no complete answer within ${REQUEST_TIMEOUT_MS} ms` });
      }, REQUEST_TIMEOUT_MS);
      outgoing.on("error", (error) => done({ status: 0, headers: {}, body: Buffer.alloc(0), length: 0, error: error.message }));
      outgoing.on("response", (incoming) => {
        const status = incoming.statusCode ?? 0;
        const type = String(incoming.headers["content-type"] ?? "");
        if (req.cutEventStream && status >= 200 && status < 300 && type.startsWith("text/event-stream")) {
          incoming.destroy();
          outgoing.destroy();
          done({ status, headers: incoming.headers, body: Buffer.alloc(0), length: 0, cut: true });
          return;
        }
        const chunks: Buffer[] = [];
        let length = 0;
        incoming.on("data", (chunk: Buffer) => {
          if (length < MAX_KEPT) chunks.push(chunk);
          length += chunk.length;
        });
        incoming.on("end", () => done({ status, headers: incoming.headers, body: Buffer.concat(chunks).subarray(0, MAX_KEPT), length }));
        incoming.on("error", (error) => done({ status, headers: incoming.headers, body: Buffer.concat(chunks), length, error: `response cut short: ${error.message}` }));
        incoming.on("aborted", () => done({ status, headers: incoming.headers, body: Buffer.concat(chunks), length, error: "response aborted by the server" }));
      });
      outgoing.end(req.body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface H2Response {
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: Buffer;
  error?: string;
  cut?: boolean;
}

/** A raw HTTP/2 client (prior knowledge): REST requests over h2c, and gRPC requests with hand-made frames. */
export class RawHttp2 {
  private session: ClientHttp2Session | undefined;
  constructor(private readonly origin: () => string) {}

  private open(): ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      const session = connectHttp2(this.origin());
      session.on("error", () => undefined);
      this.session = session;
    }
    return this.session;
  }

  /** A gRPC-style POST: headers, body, and the answer's headers and trailers. */
  send(path: string, headers: Record<string, string>, body: Buffer): Promise<H2Response> {
    return this.exchange("POST", path, headers, body, false);
  }

  /** A REST request over HTTP/2, answered like RawHttp's. */
  async request(req: RawRequest): Promise<RawResponse> {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v;
    const res = await this.exchange(req.method, req.target, headers, req.body, req.cutEventStream ?? false);
    const status = Number(res.headers[":status"] ?? 0);
    const { [":status"]: _, ...rest } = res.headers;
    void _;
    if (res.error?.startsWith("client refused:")) return { status: -1, headers: {}, body: Buffer.alloc(0), length: 0, error: res.error };
    return { status: status || 0, headers: rest, body: res.body.subarray(0, MAX_KEPT), length: res.body.length, error: status ? (res.cut ? undefined : res.error) : (res.error ?? "no :status"), cut: res.cut };
  }

  private exchange(method: string, path: string, headers: Record<string, string>, body: Buffer | undefined, cutEventStream: boolean): Promise<H2Response> {
    return new Promise<H2Response>((resolve) => {
      const out: H2Response = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
      const chunks: Buffer[] = [];
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const done = (error?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        out.body = Buffer.concat(chunks);
        if (error) out.error = error;
        resolve(out);
      };
      let stream: ReturnType<ClientHttp2Session["request"]>;
      try {
        stream = this.open().request({ [h2.HTTP2_HEADER_METHOD]: method, [h2.HTTP2_HEADER_PATH]: path, ...headers }, { endStream: body === undefined });
      } catch (error) {
        done(`client refused: ${String(error)}`);
        return;
      }
      timer = setTimeout(() => {
        stream.close(h2.NGHTTP2_CANCEL);
        done(`no complete answer within ${REQUEST_TIMEOUT_MS} ms`);
      }, REQUEST_TIMEOUT_MS);
      stream.on("response", (h) => {
        Object.assign(out.headers, flat(h));
        const status = Number(out.headers[":status"] ?? 0);
        if (cutEventStream && status >= 200 && status < 300 && (out.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          out.cut = true;
          stream.close(h2.NGHTTP2_CANCEL);
          done();
        }
      });
      stream.on("trailers", (t) => Object.assign(out.trailers, flat(t)));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      let ended = false;
      stream.on("end", () => {
        ended = true;
        done();
      });
      stream.on("close", () => done(out.headers[":status"] && (ended || stream.rstCode === h2.NGHTTP2_NO_ERROR) ? undefined : `stream closed (code ${stream.rstCode})`));
      stream.on("error", (error) => done(error.message));
      if (body !== undefined) stream.end(body);
    });
  }

  close(): void {
    this.session?.close();
  }
}

function flat(headers: Record<string, string | string[] | number | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : String(v);
  return out;
}

/** Runs `work` over `items` with at most `concurrency` at a time; results in item order. */
export async function runPool<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}

/** A percent-encoded text decoded for a report, or as it is when its escapes are malformed. */
export function decodedOrAsIs(text: string): string {
  return decodeSegment(text) ?? text;
}
