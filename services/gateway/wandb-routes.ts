// The W&B API's HTTP surface (services/wandb), mounted at the service's base URL so that
// `WANDB_BASE_URL=http://host:port` is all the wandb SDK needs: `POST /graphql`, the run file
// stream `POST /files/{entity}/{project}/{run}/file_stream`, and the signed transfer URLs that
// GraphQL hands out (`PUT /wandb/uploads/{token}`, `GET /wandb/files/{token}/{name}`), which
// carry their grant themselves as cloud storage URLs do. The SDK authenticates with HTTP basic
// `api:<key>`; errors are answered with statuses the SDK does not retry (4xx), so a request that
// is not served fails at once with the message. Every route checks its credentials (the key, or
// the upload URL's token) before it reads a body; a request refused before its body was read is
// answered with `Connection: close`, so the rest of the body is never read.
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { badRequest, toConnectError } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { FieldTooLarge, type WandbApi } from "../wandb/index.js";
import type { Callers } from "./auth/callers.js";
import { writeJson } from "./http-boundary.js";
import { httpStatusOf, retryAfterHeader } from "./rest/error-response.js";
import { BodyTooLarge, limitedBody, readBody } from "./rest/read-body.js";
import { decodeSegment, requestTarget } from "./rest/request-target.js";

/**
 * GraphQL and file-stream bodies are JSON parsed on the gateway's one event loop: bounded well
 * below uploads (the SDK's largest, a createArtifactFiles of thousands of files or a file-stream
 * batch of history rows, stays far below it).
 */
const JSON_BODY_LIMIT_BYTES = 16 * 2 ** 20;

type NodeHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Request = Parameters<NodeHandler>[0];
type Response = Parameters<NodeHandler>[1];

export interface WandbRouteOptions {
  api: WandbApi;
  callers: Callers;
  bodyLimitBytes: number;
  log: Logger;
}

/** Serves the request if it is one of the W&B API's; false otherwise. */
export function wandbRoutes(options: WandbRouteOptions): (req: Request, res: Response) => Promise<boolean> {
  const { api, callers, log } = options;
  return async (req, res) => {
    const path = requestTarget(req.url)?.pathname ?? "/";
    const verb = (req.method ?? "GET").toUpperCase();
    const route = routeOf(verb, path);
    if (!route) return false;
    const started = performance.now();
    let status = 200;
    try {
      switch (route.kind) {
        case "graphql": {
          const principal = await callers.authenticate({ authorization: header(req, "authorization") });
          const body = parseJson(await readBody(req, Math.min(options.bodyLimitBytes, JSON_BODY_LIMIT_BYTES)));
          const answer = await api.graphql(principal, body, baseUrlOf(req));
          status = answer.status;
          writeJson(res, status, answer.body, answer.headers);
          break;
        }
        case "file_stream": {
          const principal = await callers.authenticate({ authorization: header(req, "authorization") });
          const body = parseJson(await readBody(req, Math.min(options.bodyLimitBytes, JSON_BODY_LIMIT_BYTES)));
          writeJson(res, 200, await api.fileStream(principal, route.entity, route.project, route.run, body));
          break;
        }
        case "upload": {
          // The token first (unauthenticated: it is the only credential), then at most what it grants.
          const target = api.uploadTarget(route.token);
          const limit = Math.min(options.bodyLimitBytes, target.maxBytes ?? Infinity);
          const abort = new AbortController();
          res.once("close", () => abort.abort());
          // Streamed into the blob store as it arrives: never held whole.
          await target.receive(limitedBody(req, limit), limit, abort.signal);
          res.writeHead(200, { "content-length": "0", etag: '""' });
          res.end();
          break;
        }
        case "download": {
          // One byte range when asked (wandb-core reads parquet history files by ranges): 206.
          const file = await api.download(route.token, header(req, "range"));
          const ranged = file.range ? { "content-range": `bytes ${file.range.start}-${file.range.end}/${file.range.total}` } : {};
          status = file.range ? 206 : 200;
          res.writeHead(status, { "content-type": "application/octet-stream", "content-length": String(file.size), "accept-ranges": "bytes", ...ranged });
          if (verb === "HEAD") {
            res.end();
            break;
          }
          for await (const chunk of file.chunks) {
            if (!res.write(chunk)) await new Promise<void>((resolve) => res.once("drain", () => resolve()));
          }
          res.end();
          break;
        }
      }
    } catch (error) {
      // The one error mapping (core/errors.ts, then REST's statuses), in W&B's body shapes.
      const mapped = toConnectError(error);
      status = error instanceof BodyTooLarge || error instanceof FieldTooLarge ? 413 : httpStatusOf(mapped);
      if (status >= 500) log.error("wandb api request failed", { path: route.kind, error });
      const message = status === 500 ? "Internal Server Error" : mapped.rawMessage;
      const headers: Record<string, string> = retryAfterHeader(status, mapped);
      if (status === 401) headers["www-authenticate"] = 'Basic realm="wandb"';
      // A body not read (refused before it, or too large) is not read on: the connection ends with
      // the answer (HTTP/1.1 only: the header is not valid in HTTP/2, whose stream ends with its response).
      if (!req.complete && req.httpVersionMajor === 1) headers.connection = "close";
      if (res.headersSent) res.destroy();
      else writeJson(res, status, { errors: [{ message }], error: message }, headers);
    }
    log.info("request", { protocol: "wandb", route: route.kind, method: verb, status, duration_ms: Math.round(performance.now() - started) });
    return true;
  };
}

type Route =
  | { kind: "graphql" }
  | { kind: "file_stream"; entity: string; project: string; run: string }
  | { kind: "upload"; token: string }
  | { kind: "download"; token: string };

function routeOf(verb: string, path: string): Route | null {
  if (path === "/graphql" && verb === "POST") return { kind: "graphql" };
  const stream = /^\/files\/([^/]+)\/([^/]+)\/([^/]+)\/file_stream$/.exec(path);
  if (stream && verb === "POST") {
    const [entity, project, run] = [decodeSegment(stream[1] as string), decodeSegment(stream[2] as string), decodeSegment(stream[3] as string)];
    if (entity !== null && project !== null && run !== null) return { kind: "file_stream", entity, project, run };
  }
  const upload = /^\/wandb\/uploads\/([A-Za-z0-9_.-]+)$/.exec(path);
  if (upload && verb === "PUT") return { kind: "upload", token: upload[1] as string };
  const download = /^\/wandb\/files\/([A-Za-z0-9_.-]+)(?:\/.*)?$/.exec(path);
  if (download && (verb === "GET" || verb === "HEAD")) return { kind: "download", token: download[1] as string };
  return null;
}

function header(req: Request, name: string): string | null {
  const value = req.headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/** The URL this request reached the service at, for the absolute URLs handed to the SDK. */
function baseUrlOf(req: Request): string {
  const host = ("authority" in req && typeof req.authority === "string" ? req.authority : null) ?? header(req, "host") ?? "localhost";
  const proto = header(req, "x-forwarded-proto") === "https" ? "https" : "http";
  return `${proto}://${host}`;
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw badRequest("the request body is not JSON");
  }
}
