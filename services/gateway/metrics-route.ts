// GET /metrics: the Prometheus exposition (format 0.0.4) of services/core/metrics. Its labels name
// entities, so it is the operator's, not a tenant route: with METRICS_TOKEN set, only
// `Authorization: Bearer <METRICS_TOKEN>` (what Prometheus' scrape config sends) is let in; unset,
// an API key of BOOTSTRAP_ENTITY (the embedded default's first key, the operator's own) is.
import { createHash, timingSafeEqual } from "node:crypto";
import { ApiError, toConnectError } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import { scrape } from "../core/metrics/index.js";
import type { Callers } from "./auth/callers.js";
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { writeJson } from "./http-boundary.js";
import { httpStatusOf, retryAfterHeader } from "./rest/error-response.js";

// The Connect adapter's fallback hands requests over in its own types (as hf-routes.ts takes them).
type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type NodeRequest = Parameters<Fallback>[0];
type NodeResponse = Parameters<Fallback>[1];

export interface MetricsAccess {
  /** METRICS_TOKEN; "" to let the operator entity's API keys in instead. */
  token: string;
  operatorEntity: string;
}

/** Serves /metrics; false for any other path (the next route is tried). */
export function metricsRoute(deps: { access: MetricsAccess; callers: Callers; log: Logger }): (req: NodeRequest, res: NodeResponse) => Promise<boolean> {
  return async (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/metrics") return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      writeJson(res, 405, { detail: "Method Not Allowed: /metrics answers GET" }, { allow: "GET, HEAD" });
      return true;
    }
    try {
      await admit(req, deps);
    } catch (error) {
      const connect = toConnectError(error);
      const status = httpStatusOf(connect);
      writeJson(res, status, { detail: connect.rawMessage }, { ...(status === 401 ? { "www-authenticate": "Bearer" } : {}), ...retryAfterHeader(status, connect) });
      return true;
    }
    const { contentType, body } = await scrape();
    res.writeHead(200, { "content-type": contentType, "content-length": String(Buffer.byteLength(body)), "cache-control": "no-store" });
    res.end(req.method === "HEAD" ? "" : body);
    return true;
  };
}

async function admit(req: NodeRequest, deps: { access: MetricsAccess; callers: Callers }): Promise<void> {
  const authorization = header(req, "authorization");
  const { token, operatorEntity } = deps.access;
  if (token !== "") {
    const given = /^Bearer (.+)$/i.exec(authorization ?? "")?.[1] ?? "";
    if (!sameSecret(given, token)) throw new ApiError("unauthenticated", "/metrics needs 'Authorization: Bearer <METRICS_TOKEN>'");
    return;
  }
  if (!authorization && !header(req, "x-api-key")) throw new ApiError("unauthenticated", `/metrics needs an API key of the operator entity "${operatorEntity}" (BOOTSTRAP_ENTITY), or METRICS_TOKEN set and sent as a bearer token`);
  const principal = await deps.callers.authenticate({ authorization: authorization ?? null, apiKey: header(req, "x-api-key") ?? null });
  if (principal.entity !== operatorEntity) throw new ApiError("permission_denied", `/metrics is the operator's: only API keys of entity "${operatorEntity}" (BOOTSTRAP_ENTITY) may read it, or set METRICS_TOKEN`);
}

function header(req: NodeRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Compares digests, so neither the token's length nor its bytes leak through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
