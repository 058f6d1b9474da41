// The outermost boundary of every HTTP request, whatever serves it (Connect/gRPC, REST, console
// files): requests whose target or authority cannot be read are refused here (the Connect adapter
// throws on them synchronously, which would end the process), and any error a handler lets
// escape, thrown or rejected, is answered and logged instead of reaching the process.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Logger } from "../core/logger.js";
import { MAX_TARGET_LENGTH, requestTarget } from "./rest/request-target.js";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;
export type NodeHandler = (req: NodeRequest, res: NodeResponse) => unknown;
/** What answering needs of a response (Node's, or the Connect adapter's view of it). */
interface AnswerableResponse {
  readonly headersSent: boolean;
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(text: string): unknown;
  destroy(): unknown;
}

export function guardRequests(handler: NodeHandler, log: Logger): (req: NodeRequest, res: NodeResponse) => void {
  return (req, res) => {
    const refusal = refusalOf(req);
    if (refusal) {
      writeJson(res, refusal.status, { detail: refusal.detail });
      return;
    }
    try {
      const result = handler(req, res);
      if (result instanceof Promise) result.catch((error: unknown) => answerFailure(res, error, log));
    } catch (error) {
      answerFailure(res, error, log);
    }
  };
}

/** Answers a request whose handler failed: 500 if nothing was sent yet, else the response is cut. */
export function answerFailure(res: AnswerableResponse, error: unknown, log: Logger): void {
  log.error("request handler failed", { error });
  if (res.headersSent) res.destroy();
  else writeJson(res, 500, { detail: "Internal Server Error" });
}

function refusalOf(req: NodeRequest): { status: number; detail: string } | undefined {
  const url = req.url ?? "";
  if (url.length > MAX_TARGET_LENGTH) return { status: 414, detail: `the request target is longer than ${MAX_TARGET_LENGTH} characters` };
  if (!requestTarget(url)) return { status: 400, detail: "the request target must be a path (or an http URL)" };
  const authority = "authority" in req ? req.authority : req.headers.host;
  if (!authority || !URL.canParse(`http://${authority}/`)) return { status: 400, detail: "the request needs a valid Host header (or :authority)" };
  return undefined;
}

/** A whole JSON response; a response whose headers went out already is cut instead. */
export function writeJson(res: AnswerableResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  try {
    const text = JSON.stringify(body);
    res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) });
    res.end(text);
  } catch {
    res.destroy();
  }
}
