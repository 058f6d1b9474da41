// REST/JSON at the documented /v1 paths, driven by the google.api.http options: match the route,
// authenticate, decode and validate the JSON (pydantic-style 422s), call the same endpoint the
// Connect and gRPC routes call, and write JSON (or server-sent events for streaming methods).
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { create, fromJson, ScalarType, type DescMessage, type JsonObject, type JsonValue, type Message } from "@bufbuild/protobuf";
import { ConnectError, createContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { toConnectError, validationError, type Violation } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import type { ApiKeys } from "../auth/api-keys.js";
import { authenticate, principalKey } from "../auth/authenticate.js";
import { rawBodyKey, restValidatedKey, type Endpoint } from "../pipeline.js";
import { restRule } from "../validation/rules.js";
import { decodeFields, plain } from "./json-decode.js";
import { encodeMessage } from "./json-encode.js";
import { JsonSyntaxError, parseJsonLossless, type LosslessJson } from "./json-parse.js";
import { allowedVerbs, matchRoutes, restRoutes, type RestRoute } from "./http-rules.js";
import { restError } from "./error-response.js";
import { multipartBoundary, parseMultipart, type MultipartForm } from "./multipart.js";
import { BodyTooLarge, readBody } from "./read-body.js";

type NodeHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Request = Parameters<NodeHandler>[0];
type Response = Parameters<NodeHandler>[1];

export interface TranscoderOptions {
  endpoints: Endpoint[];
  keys: ApiKeys;
  bodyLimitBytes: number;
  log: Logger;
  shutdownSignal: AbortSignal;
}

export function createTranscoder(options: TranscoderOptions) {
  const endpointOf = new Map(options.endpoints.map((e) => [e.method, e]));
  const routes = restRoutes([...new Set(options.endpoints.map((e) => e.service))]);

  return async function handleRest(req: Request, res: Response): Promise<void> {
    const started = performance.now();
    const url = new URL(req.url ?? "/", "http://localhost");
    const verb = (req.method ?? "GET").toUpperCase();
    let route: RestRoute | undefined;
    let status = 500;
    try {
      const candidates = matchRoutes(routes, verb, url.pathname);
      const first = candidates[0];
      if (!first) {
        const allowed = allowedVerbs(routes, url.pathname);
        status = allowed.length > 0 ? 405 : 404;
        writeJson(res, status, { detail: status === 405 ? "Method Not Allowed" : "Not Found" }, allowed.length > 0 ? { allow: allowed.join(", ") } : {});
        return;
      }
      route = first.route;
      const openai = restRule(first.route.method)?.openaiErrors ?? false;
      try {
        const values = createContextValues();
        if (!(restRule(first.route.method)?.public ?? false)) {
          values.set(principalKey, await authenticate(options.keys, header(req, "authorization")));
        }
        const raw = first.route.body === "" ? undefined : await readBody(req, options.bodyLimitBytes);
        const body = raw === undefined || rawBodyField(first.route) ? undefined : parseBody(raw);
        const chosen = chooseRoute(candidates, body);
        route = chosen.route;
        const endpoint = endpointOf.get(chosen.route.method);
        if (!endpoint) throw new Error(`no endpoint for ${chosen.route.method.name}`);
        const form = raw !== undefined && rawBodyField(chosen.route) ? multipartForm(chosen.route, header(req, "content-type"), raw) : undefined;
        const request = decodeRequest(chosen.route, chosen.params, url.searchParams, body, raw, form);
        values.set(restValidatedKey, true);
        if (isObject(body)) values.set(rawBodyKey, plain(body) as JsonObject);
        const abort = new AbortController();
        res.on("close", () => abort.abort(new ConnectError("client closed the connection", 1)));
        const context = createHandlerContext({
          service: chosen.route.service,
          method: chosen.route.method,
          protocolName: "rest",
          requestMethod: verb,
          url: url.toString(),
          requestSignal: abort.signal,
          shutdownSignal: options.shutdownSignal,
          requestHeader: headersOf(req),
          contextValues: values,
        });
        if (endpoint.stream && restRule(chosen.route.method)?.rawResponse) status = await streamRaw(res, endpoint, request, context);
        else if (endpoint.stream) status = await streamEvents(res, endpoint, request, context, openai);
        else status = await respondUnary(res, endpoint, chosen.route, request, context);
      } catch (error) {
        if (error instanceof BodyTooLarge) {
          status = 413;
          writeJson(res, 413, { detail: error.message }, { connection: "close" });
          return;
        }
        const connectError = toConnectError(error);
        const mapped = restError(connectError, { output: route?.method.output, openai });
        status = mapped.status;
        if (status >= 500) options.log.error("request failed", { path: url.pathname, error: connectError.cause ?? connectError });
        if (!res.headersSent) writeJson(res, mapped.status, mapped.body, mapped.headers);
        else res.end();
      }
    } finally {
      options.log.info("request", {
        protocol: "rest",
        verb,
        path: url.pathname,
        rpc: route ? `${route.service.typeName}/${route.method.name}` : undefined,
        status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
      });
    }
  };
}

function parseBody(raw: Buffer): LosslessJson | undefined {
  const text = raw.toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return parseJsonLossless(text);
  } catch (error) {
    const position = error instanceof JsonSyntaxError ? error.position : 0;
    const reason = error instanceof JsonSyntaxError ? error.message : "Expecting value";
    throw validationError([{ type: "json_invalid", loc: ["body", position], msg: "JSON decode error", input: {}, ctx: { error: reason } }]);
  }
}

/** Streaming twins share a rule; the body flag they name (e.g. `stream: true`) picks them. */
function chooseRoute<T extends { route: RestRoute }>(candidates: T[], body: LosslessJson | undefined): T {
  const flagged = candidates.find((c) => {
    const flag = restRule(c.route.method)?.selectWhenTrue;
    return flag && isObject(body) && body[flag] === true;
  });
  return flagged ?? candidates.find((c) => !restRule(c.route.method)?.selectWhenTrue) ?? (candidates[0] as T);
}

/** A rule whose body is one `bytes` field takes the request body as the raw file (uploads). */
function rawBodyField(route: RestRoute): boolean {
  const field = route.method.input.fields.find((f) => f.name === route.body);
  return field?.fieldKind === "scalar" && field.scalar === ScalarType.BYTES;
}

/** A multipart form sent to an upload rule that accepts one (`srl.v1.rest` `multipart_files`). */
function multipartForm(route: RestRoute, contentType: string | null, raw: Buffer): (MultipartForm & { filesField: string }) | undefined {
  const filesField = restRule(route.method)?.multipartFiles ?? "";
  const boundary = filesField === "" ? null : multipartBoundary(contentType);
  return boundary === null ? undefined : { ...parseMultipart(raw, boundary), filesField };
}

function decodeRequest(
  route: RestRoute,
  params: Record<string, string>,
  query: URLSearchParams,
  body: LosslessJson | undefined,
  raw: Buffer | undefined,
  form?: MultipartForm & { filesField: string },
): Message {
  const desc = route.method.input;
  const violations: Violation[] = [];
  const pathFields = new Set(route.pathParams);
  const others = (keep: Set<string>) => new Set(desc.fields.map((f) => f.name).filter((n) => !keep.has(n)));
  const json: JsonObject = decodeFields(desc, params, ["path"], violations, others(pathFields));
  if (route.body !== "*") {
    // Fields neither in the path nor the body come from the query string.
    const bound = new Set([...pathFields, ...(route.body ? [route.body] : []), ...(form ? [form.filesField] : [])]);
    // A multipart form's text fields are read as query parameters are, and win over them.
    const source = new URLSearchParams(query);
    for (const [name, value] of form?.fields ?? []) source.set(name, value);
    Object.assign(json, decodeFields(desc, queryObject(desc, source), [form ? "body" : "query"], violations, bound));
  }
  if (form) {
    if (form.files.length === 0) violations.push({ type: "missing", loc: ["body", form.filesField], msg: "Field required", input: null });
    json[form.filesField] = form.files.map((file) => ({ filename: file.filename, content: file.content.toString("base64") }));
  } else if (route.body === "") {
    // No body.
  } else if (rawBodyField(route)) {
    if (!raw || raw.length === 0) violations.push({ type: "missing", loc: ["body"], msg: "Field required", input: null });
    else json[route.body] = raw.toString("base64");
  } else if (body === undefined) {
    violations.push({ type: "missing", loc: ["body"], msg: "Field required", input: null });
  } else if (!isObject(body)) {
    violations.push({ type: "model_attributes_type", loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", input: plain(body) });
  } else if (route.body === "*") {
    Object.assign(json, decodeFields(desc, body, ["body"], violations, pathFields));
  } else {
    Object.assign(json, decodeFields(desc, { [route.body]: body }, [], violations, others(new Set([route.body]))));
  }
  if (violations.length > 0) throw validationError(violations);
  try {
    return fromJson(desc, json, { ignoreUnknownFields: true });
  } catch (error) {
    throw validationError([{ type: "value_error", loc: ["body"], msg: `Value error, ${error instanceof Error ? error.message : String(error)}`, input: null }]);
  }
}

function queryObject(desc: DescMessage, query: URLSearchParams): { [key: string]: LosslessJson } {
  const out: { [key: string]: LosslessJson } = {};
  for (const field of desc.fields) {
    const values = query.getAll(field.name);
    if (values.length === 0) continue;
    out[field.name] = field.fieldKind === "list" ? values : (values[values.length - 1] as string);
  }
  return out;
}

async function respondUnary(res: Response, endpoint: Endpoint, route: RestRoute, request: Message, context: HandlerContext): Promise<number> {
  const unary = endpoint.unary;
  if (!unary) throw new Error("not a unary endpoint");
  const output = create(route.method.output, await unary(request, context));
  const json = encodeMessage(route.method.output, output);
  writeJson(res, 200, route.responseBody ? (json[route.responseBody] ?? null) : json, headersToRecord(context.responseHeader));
  return 200;
}

/** Server-sent events: `data: {json}` per message, then `data: [DONE]`. Errors before the first message are plain JSON errors. */
async function streamEvents(res: Response, endpoint: Endpoint, request: Message, context: HandlerContext, openai: boolean): Promise<number> {
  const stream = endpoint.stream;
  if (!stream) throw new Error("not a streaming endpoint");
  const output = endpoint.method.output;
  const iterator = stream(request, context)[Symbol.asyncIterator]();
  let next = await iterator.next();
  res.writeHead(200, { ...headersToRecord(context.responseHeader), "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" });
  try {
    while (!next.done) {
      res.write(`data: ${JSON.stringify(encodeMessage(output, create(output, next.value)))}\n\n`);
      if (context.signal.aborted) break;
      next = await iterator.next();
    }
    if (!context.signal.aborted) res.write("data: [DONE]\n\n");
  } catch (error) {
    const mapped = restError(toConnectError(error), { openai });
    res.write(`data: ${JSON.stringify(mapped.body)}\n\n`);
  } finally {
    await iterator.return?.();
    res.end();
  }
  return 200;
}

/**
 * A file as its own bytes (rules with `raw_response`): headers from the first message, then each
 * message's `data`. An error before the first message is a plain JSON error; after it, the
 * connection is cut short, so the client sees fewer bytes than Content-Length promised.
 */
async function streamRaw(res: Response, endpoint: Endpoint, request: Message, context: HandlerContext): Promise<number> {
  const stream = endpoint.stream;
  if (!stream) throw new Error("not a streaming endpoint");
  const iterator = stream(request, context)[Symbol.asyncIterator]();
  let next = await iterator.next();
  const first = next.done ? undefined : (next.value as { contentType?: string; filename?: string; size?: bigint });
  const filename = (first?.filename ?? "download").replace(/["\\\r\n]/g, "_");
  res.writeHead(200, {
    ...headersToRecord(context.responseHeader),
    "content-type": first?.contentType || "application/octet-stream",
    ...(first?.size !== undefined ? { "content-length": String(first.size) } : {}),
    "content-disposition": `attachment; filename="${filename}"`,
  });
  try {
    while (!next.done) {
      const data = (next.value as { data?: Uint8Array }).data;
      // Back-pressure: wait for the socket to take the last chunk (or for the client to leave).
      if (data && data.byteLength > 0 && !res.write(data)) {
        await new Promise((resolve) => {
          res.once("drain", resolve);
          res.once("close", resolve);
        });
      }
      if (context.signal.aborted) break;
      next = await iterator.next();
    }
    res.end();
  } catch {
    res.destroy();
  } finally {
    await iterator.return?.();
  }
  return 200;
}

function writeJson(res: Response, status: number, body: JsonValue, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) });
  res.end(text);
}

function header(req: Request, name: string): string | null {
  const value = req.headers[name];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

function headersOf(req: Request): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return headers;
}

function headersToRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

function isObject(value: LosslessJson | undefined): value is { [key: string]: LosslessJson } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
