// REST/JSON at the documented /v1 paths, driven by the google.api.http options: match the route,
// authenticate, decode and validate the JSON (pydantic-style 422s), call the same endpoint the
// Connect and gRPC routes call, and write JSON (or server-sent events for streaming methods).
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import { create, fromJson, ScalarType, toBinary, type DescMessage, type DescMethod, type JsonObject, type JsonValue, type Message } from "@bufbuild/protobuf";
import { ConnectError, createContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { clipText } from "../core/clip.js";
import { toConnectError, validationError, type Violation } from "../core/errors.js";
import type { Logger } from "../core/logger.js";
import type { Callers } from "./auth/callers.js";
import { principalKey, rawBodyKey, restValidatedKey, stagedFilesKey } from "../core/rpc/index.js";
import type { Endpoint } from "./pipeline.js";
import { fieldRule, restRule, typedSseEvents } from "./validation/rules.js";
import { unknownFieldViolations } from "./rest/unknown-fields.js";
import { decodeFields, finiteNumberViolation, plain } from "./rest/json-decode.js";
import { encodeMessage } from "./rest/json-encode.js";
import { JsonSyntaxError, parseJsonLossless, type LosslessJson, type ParsedJson } from "./rest/json-parse.js";
import { allowedVerbs, matchRoutes, restRoutes, type RestRoute } from "./rest/http-rules.js";
import { errorStyleOf, messageBody, restError, type ErrorStyle } from "./rest/error-response.js";
import { multipartBoundary } from "./rest/multipart.js";
import { acceptsProtobuf, decodeProtobufBody, isProtobufContentType } from "./rest/protobuf-body.js";
import { BodyTooLarge, readBody } from "./rest/read-body.js";
import { streamUpload, type StageBlob, type StreamedUpload } from "./rest/streamed-upload.js";
import { requestTarget } from "./rest/request-target.js";
import { writeJson } from "./http-boundary.js";

type NodeHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
type Request = Parameters<NodeHandler>[0];
type Response = Parameters<NodeHandler>[1];

export interface TranscoderOptions {
  endpoints: Endpoint[];
  callers: Callers;
  /** Largest request body of a method (413 past it, before anything is parsed). */
  bodyLimitOf(method: DescMethod): number;
  /** Where upload routes (a `bytes` body) stream their files: the blob store. */
  stageUpload: StageBlob;
  log: Logger;
  shutdownSignal: AbortSignal;
}

export function createTranscoder(options: TranscoderOptions) {
  const endpointOf = new Map(options.endpoints.map((e) => [e.method, e]));
  const routes = restRoutes([...new Set(options.endpoints.map((e) => e.service))]);

  return async function handleRest(req: Request, res: Response): Promise<void> {
    const started = performance.now();
    const verb = (req.method ?? "GET").toUpperCase();
    // The boundary in front (http-boundary.ts) has refused targets that are not a path.
    const target = requestTarget(req.url) ?? { pathname: "/", query: new URLSearchParams() };
    let route: RestRoute | undefined;
    let style: ErrorStyle = "fastapi";
    let status = 500;
    try {
      const candidates = matchRoutes(routes, verb, target.pathname);
      const first = candidates[0];
      if (!first) {
        const allowed = allowedVerbs(routes, target.pathname);
        status = allowed.length > 0 ? 405 : 404;
        writeJson(res, status, { detail: status === 405 ? "Method Not Allowed" : "Not Found" }, allowed.length > 0 ? { allow: allowed.join(", ") } : {});
        return;
      }
      route = first.route;
      style = errorStyleOf(restRule(first.route.method));
      const values = createContextValues();
      if (!(restRule(first.route.method)?.public ?? false)) {
        values.set(principalKey, await options.callers.authenticate({ authorization: header(req, "authorization"), apiKey: header(req, "x-api-key") }));
      }
      const abort = new AbortController();
      res.on("close", () => abort.abort(new ConnectError("client closed the connection", 1)));
      const limit = options.bodyLimitOf(first.route.method);
      // A protobuf body (rules with `protobuf_body`) is the input message itself, checked by the
      // message validator as gRPC requests are.
      const protobuf = (restRule(first.route.method)?.protobufBody ?? false) && isProtobufContentType(header(req, "content-type"));
      // Uploads stream into the blob store; other bodies are JSON, read whole up to the limit.
      const upload = !protobuf && first.route.body !== "" && rawBodyField(first.route) ? await streamUpload(req, uploadBoundary(first.route, header(req, "content-type")), limit, options.stageUpload, abort.signal) : undefined;
      const raw = first.route.body === "" || upload ? undefined : await readBody(req, limit);
      const body = raw === undefined || protobuf ? undefined : parseBody(raw);
      const chosen = chooseRoute(candidates, body);
      route = chosen.route;
      const endpoint = endpointOf.get(chosen.route.method);
      if (!endpoint) throw new Error(`no endpoint for ${chosen.route.method.name}`);
      const request = protobuf ? decodeProtobufBody(chosen.route.method.input, raw ?? Buffer.alloc(0), header(req, "content-encoding"), limit) : decodeRequest(chosen.route, chosen.params, target.query, body, upload);
      if (!protobuf) values.set(restValidatedKey, true);
      if (upload) values.set(stagedFilesKey, upload.files);
      if (isObject(body)) values.set(rawBodyKey, plain(body) as JsonObject);
      const context = createHandlerContext({
        service: chosen.route.service,
        method: chosen.route.method,
        protocolName: "rest",
        requestMethod: verb,
        url: `http://localhost${req.url ?? "/"}`,
        requestSignal: abort.signal,
        shutdownSignal: options.shutdownSignal,
        requestHeader: headersOf(req),
        contextValues: values,
      });
      if (endpoint.stream && restRule(chosen.route.method)?.rawResponse) status = await streamRaw(res, endpoint, request, context);
      else if (endpoint.stream) status = await streamEvents(res, endpoint, request, context, style);
      else status = await respondUnary(res, endpoint, chosen.route, request, context, acceptsProtobuf(header(req, "accept")));
    } catch (error) {
      // Failed before a route was chosen (a malformed path parameter): an OpenAI (Anthropic)
      // route's path still gets that API's shape.
      const styled = route ? undefined : routes.find((r) => r.verb === verb && r.matcher.test(target.pathname) && errorStyleOf(restRule(r.method)) !== "fastapi");
      if (styled) style = errorStyleOf(restRule(styled.method));
      status = writeError(res, error, { output: route?.method.output, style, log: options.log, path: target.pathname });
    } finally {
      options.log.info("request", {
        protocol: "rest",
        verb,
        path: clipText(target.pathname, 200),
        rpc: route ? `${route.service.typeName}/${route.method.name}` : undefined,
        status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
      });
    }
  };
}

/** Answers a failed request (or cuts a response already under way); the status it answered. */
function writeError(res: Response, error: unknown, where: { output?: DescMessage; style: ErrorStyle; log: Logger; path: string }): number {
  if (error instanceof BodyTooLarge) {
    if (!res.headersSent) writeJson(res, 413, messageBody(413, error.message, where.style), { connection: "close" });
    return 413;
  }
  const connectError = toConnectError(error);
  const mapped = restError(connectError, { output: where.output, style: where.style });
  if (mapped.status >= 500) where.log.error("request failed", { path: clipText(where.path, 200), code: connectError.code, error: connectError.cause ?? connectError });
  if (!res.headersSent) writeJson(res, mapped.status, mapped.body, mapped.headers);
  else res.destroy();
  return mapped.status;
}

function parseBody(raw: Buffer): LosslessJson | undefined {
  const text = raw.toString("utf8");
  if (text.trim() === "") return undefined;
  let parsed: ParsedJson;
  try {
    parsed = parseJsonLossless(text);
  } catch (error) {
    const position = error instanceof JsonSyntaxError ? error.position : 0;
    const reason = error instanceof JsonSyntaxError ? error.message : "Expecting value";
    throw validationError([{ type: "json_invalid", loc: ["body", position], msg: "JSON decode error", input: {}, ctx: { error: reason } }]);
  }
  if (parsed.nonFinite.length > 0) {
    // 1e309 and the like: no double holds them (JSON.parse gives Infinity), so no field can take them.
    throw validationError(parsed.nonFinite.map(({ path, value }) => finiteNumberViolation(["body", ...path], String(value))));
  }
  return parsed.value;
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

/** The boundary of a multipart form sent to an upload rule that accepts one (`srl.v1.rest` `multipart_files`); null: a raw body. */
function uploadBoundary(route: RestRoute, contentType: string | null): string | null {
  return (restRule(route.method)?.multipartFiles ?? "") === "" ? null : multipartBoundary(contentType);
}

function decodeRequest(route: RestRoute, params: Record<string, string>, query: URLSearchParams, body: LosslessJson | undefined, upload?: StreamedUpload): Message {
  const form = upload?.multipart ? { fields: upload.fields, filesField: restRule(route.method)?.multipartFiles ?? "" } : undefined;
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
    // The files themselves are in the blob store already (stagedFilesKey).
    if (upload?.files.length === 0) violations.push({ type: "missing", loc: ["body", form.filesField], msg: "Field required", input: null });
  } else if (route.body === "") {
    // No body.
  } else if (upload) {
    if (upload.files.length === 0) violations.push({ type: "missing", loc: ["body"], msg: "Field required", input: null });
  } else if (body === undefined) {
    violations.push({ type: "missing", loc: ["body"], msg: "Field required", input: null });
  } else if (!isObject(body)) {
    violations.push({ type: "model_attributes_type", loc: ["body"], msg: "Input should be a valid dictionary or object to extract fields from", input: plain(body) });
  } else if (route.body === "*") {
    Object.assign(json, decodeFields(desc, body, ["body"], violations, pathFields));
    violations.push(...unknownFieldViolations(desc, body, ["body"]));
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

async function respondUnary(res: Response, endpoint: Endpoint, route: RestRoute, request: Message, context: HandlerContext, protobufAccepted: boolean): Promise<number> {
  const unary = endpoint.unary;
  if (!unary) throw new Error("not a unary endpoint");
  const output = create(route.method.output, await unary(request, context));
  const oneofName = restRule(route.method)?.responseOneof ?? "";
  if (oneofName !== "") return respondOneofMember(res, route.method.output, output, oneofName, headersToRecord(context.responseHeader), protobufAccepted);
  const json = encodeMessage(route.method.output, output);
  writeJson(res, 200, route.responseBody ? (json[route.responseBody] ?? null) : json, headersToRecord(context.responseHeader));
  return 200;
}

/**
 * Rules with `response_oneof`: the set member is the body, with the member's `http_status`; a
 * member of a message type outside the service's own packages (Tinker's wire messages) goes in
 * protobuf's binary encoding when the client accepts it.
 */
function respondOneofMember(res: Response, desc: DescMessage, output: Message, oneofName: string, headers: Record<string, string>, protobufAccepted: boolean): number {
  const oneof = desc.oneofs.find((o) => o.name === oneofName);
  if (!oneof) throw new Error(`${desc.typeName} has no oneof ${oneofName}`);
  const selected = (output as unknown as Record<string, { case: string | undefined; value?: unknown }>)[oneof.localName];
  const member = oneof.fields.find((f) => f.localName === selected?.case);
  if (!member || member.fieldKind !== "message") throw new Error(`${desc.typeName}.${oneofName} is not set to a message`);
  const status = fieldRule(member).httpStatus || 200;
  const value = selected?.value as Message;
  if (protobufAccepted && !member.message.typeName.startsWith("srl.")) {
    const bytes = toBinary(member.message, value);
    res.writeHead(status, { ...headers, "content-type": "application/x-protobuf", "content-length": String(bytes.byteLength) });
    res.end(bytes);
    return status;
  }
  writeJson(res, status, encodeMessage(member.message, value), headers);
  return status;
}

/** How long a stream's first message may take before the headers go out without it. */
const FIRST_MESSAGE_WAIT_MS = 5_000;

/**
 * Server-sent events: `data: {json}` per message, then `data: [DONE]`. Errors before the first
 * message are plain JSON errors; a first message that takes longer than FIRST_MESSAGE_WAIT_MS
 * (a watch of a job that is quiet) does not hold the headers back, so the client knows the
 * stream is open, and later errors arrive as a `data:` message. Methods with
 * `(srl.v1.sse_events) = SSE_EVENTS_TYPED` frame each message as `event: <its type>` with no
 * `[DONE]`, and a later error as `event: error` (sseFraming).
 */
async function streamEvents(res: Response, endpoint: Endpoint, request: Message, context: HandlerContext, style: ErrorStyle): Promise<number> {
  const stream = endpoint.stream;
  if (!stream) throw new Error("not a streaming endpoint");
  const output = endpoint.method.output;
  const framing = sseFraming(typedSseEvents(endpoint.method));
  const iterator = stream(request, context)[Symbol.asyncIterator]();
  const first = iterator.next();
  let timer: NodeJS.Timeout | undefined;
  const slow = await Promise.race([first.then(() => false), new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), FIRST_MESSAGE_WAIT_MS)))]).finally(() => clearTimeout(timer));
  const open = () => res.writeHead(200, { ...headersToRecord(context.responseHeader), "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" });
  if (slow) {
    open();
    // A comment line (SSE clients skip it) puts the headers on the wire.
    res.write(": waiting for the first message\n\n");
  }
  let next: Awaited<typeof first>;
  try {
    next = await first;
  } catch (error) {
    if (!slow) throw error;
    res.end(framing.error(restError(toConnectError(error), { style }).body));
    return 200;
  }
  if (!slow) open();
  try {
    while (!next.done) {
      await written(res, framing.message(encodeMessage(output, create(output, next.value))));
      if (context.signal.aborted) break;
      next = await iterator.next();
    }
    if (!context.signal.aborted) res.write(framing.end);
  } catch (error) {
    const mapped = restError(toConnectError(error), { style });
    res.write(framing.error(mapped.body));
  } finally {
    await iterator.return?.();
    res.end();
  }
  return 200;
}

interface SseFraming {
  message(json: JsonValue): string;
  error(body: JsonValue): string;
  end: string;
}

/**
 * How events are written. Typed: the message's own `type` names the event (OpenAI Responses,
 * Anthropic Messages), and an error is `{"type": "error"}` merged with the route's error body, so
 * each API's clients find their usual error object in it.
 */
function sseFraming(typed: boolean): SseFraming {
  if (!typed) return { message: (json) => `data: ${JSON.stringify(json)}\n\n`, error: (body) => `data: ${JSON.stringify(body)}\n\n`, end: "data: [DONE]\n\n" };
  return {
    message: (json) => {
      if (!isJsonObject(json)) return `event: message\ndata: ${JSON.stringify(json)}\n\n`;
      // One message type carries every event's fields: an event shows only those it sets.
      const event = Object.fromEntries(Object.entries(json).filter(([, value]) => value !== null));
      return `event: ${typeof json.type === "string" ? json.type : "message"}\ndata: ${JSON.stringify(event)}\n\n`;
    },
    error: (body) => `event: error\ndata: ${JSON.stringify({ type: "error", ...(isJsonObject(body) ? body : { error: body }) })}\n\n`,
    end: "",
  };
}

function isJsonObject(value: JsonValue): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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
  const filename = first?.filename || "download";
  res.writeHead(200, {
    ...headersToRecord(context.responseHeader),
    "content-type": first?.contentType || "application/octet-stream",
    ...(first?.size !== undefined ? { "content-length": String(first.size) } : {}),
    "content-disposition": contentDisposition(filename),
  });
  try {
    while (!next.done) {
      const data = (next.value as { data?: Uint8Array }).data;
      if (data && data.byteLength > 0) await written(res, data);
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

/**
 * Writes a chunk and waits until the connection has taken it (or is gone): a client that reads
 * slowly holds the stream back instead of piling it up in memory, and one that stops reading is
 * cut off by the listener's stall timeout.
 */
async function written(res: Response, chunk: string | Uint8Array): Promise<void> {
  if (res.write(chunk) || res.destroyed) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/** An attachment header for any file name: an ASCII stand-in, and the name itself as RFC 6266 allows. */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return ascii === filename ? `attachment; filename="${ascii}"` : `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
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
  // HTTP/2 names the host in :authority, which Headers cannot hold: handlers read it as Host.
  const authority = req.headers[":authority"];
  if (!headers.has("host") && typeof authority === "string") headers.set("host", authority);
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
