// Connect, gRPC-Web and gRPC requests for the fuzz suite: junk bytes, junk JSON, junk envelopes and
// frames by hand, and well-typed random messages through the real clients (connect-node,
// @grpc/grpc-js). Every answer is read down to its status code.
import fc from "fast-check";
import { create, fromBinary, fromJsonString, toBinary, toJsonString, type DescMessage, type DescMethod, type DescMethodServerStreaming, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { deepJson } from "./fuzz-json.js";
import { cheapenChatInit, type Init, type InitGen, type FuzzTargets } from "./fuzz-messages.js";
import { decodedOrAsIs, RawHttp, RawHttp2 } from "./fuzz-http.js";
import type { Violation } from "./fuzz-rest.js";

export const CODE_NAMES = [
  "ok",
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
] as const;

/** Codes that a client's fault or a real state maps to. */
export const ALLOWED_CODES = new Set(["invalid_argument", "unauthenticated", "permission_denied", "not_found", "already_exists", "failed_precondition", "resource_exhausted", "out_of_range", "unimplemented"]);

export type Expect = "invalid" | "any";
export type RpcKind = "connect-unary-proto" | "connect-unary-json" | "connect-deep-json" | "connect-stream" | "grpc-web" | "grpc-h2-frame" | "grpc-js-junk" | "typed-connect-json" | "typed-connect-binary" | "typed-grpc-web" | "typed-grpc";

export interface RpcCase {
  kind: RpcKind;
  method: DescMethod;
  expect: Expect;
  auth: "a" | "b" | "none";
  /** Raw cases: the request body (or, for grpc-js, the one message's bytes). */
  body?: Buffer;
  contentType?: string;
  /** Typed cases: the message. */
  init?: Init;
  /** A short description of the junk. */
  note: string;
}

export interface RpcOutcome {
  code: string;
  httpStatus?: number;
  message: string;
  /** We cancelled it ourselves (a watch that would wait for events): no verdict. */
  ownCancel?: boolean;
  /** The client could not send it (a message JSON cannot express): no verdict. */
  skipped?: boolean;
}

const label = (m: DescMethod) => `${m.parent.typeName}/${m.name}`;
export const rpcLabel = (c: RpcCase) => `${c.kind} ${label(c.method)}`;

export function envelope(flags: number, payload: Buffer, declared = payload.length): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(declared >>> 0, 1);
  return Buffer.concat([head, payload]);
}

function decodes(desc: DescMessage, bytes: Uint8Array): boolean {
  try {
    fromBinary(desc, bytes);
    return true;
  } catch {
    return false;
  }
}

function decodesJson(desc: DescMessage, text: string): boolean {
  try {
    fromJsonString(desc, text, { ignoreUnknownFields: true });
    return true;
  } catch {
    return false;
  }
}

/** Bytes no protobuf parser takes (checked against protobuf-es when the case is built). */
const BROKEN_PROTOBUF = [
  [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f], // length-delimited field 1, 4 GiB long
  [0x0a, 0x05, 0x61], // length 5, one byte
  [0x08], // varint field without its value
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // varint tag longer than 10 bytes
  [0x0f], // wire type 7
  [0x0e, 0x01], // wire type 6
  [0x00, 0x01], // field number 0
  [0x0b, 0x0a, 0x01], // a group that never ends
  [0x0c], // end group without a start
  [0x0a, 0x02, 0xc3, 0x28], // string field 1 with invalid UTF-8
  [0x11, 0x01, 0x02], // fixed64 cut short
];

export class RpcCases {
  constructor(private readonly inits: InitGen) {}

  /** Protobuf-ish payloads: random, broken on purpose, or a valid message with a byte changed or cut. */
  private payload(method: DescMethod): fc.Arbitrary<{ bytes: Buffer; note: string }> {
    const valid = this.inits.message(method.input).map((init) => Buffer.from(toBinary(method.input, create(method.input, init as MessageInitShape<DescMessage>))));
    return fc.oneof(
      { arbitrary: fc.uint8Array({ maxLength: 96 }).map((b) => ({ bytes: Buffer.from(b), note: "random bytes" })), weight: 4 },
      { arbitrary: fc.constantFrom(...BROKEN_PROTOBUF).map((b) => ({ bytes: Buffer.from(b), note: "broken protobuf" })), weight: 3 },
      {
        arbitrary: fc.tuple(valid, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean()).map(([bytes, at, value, cut]) => {
          if (bytes.length === 0) return { bytes: Buffer.from([value]), note: "one byte" };
          const i = at % bytes.length;
          if (cut) return { bytes: bytes.subarray(0, i), note: `valid message cut at ${i}` };
          const copy = Buffer.from(bytes);
          copy[i] = value;
          return { bytes: copy, note: `valid message with byte ${i} set to ${value}` };
        }),
        weight: 3,
      },
    );
  }

  private authArb = fc.oneof({ arbitrary: fc.constant("a" as const), weight: 6 }, { arbitrary: fc.constant("b" as const), weight: 1 }, { arbitrary: fc.constant("none" as const), weight: 1 });

  /** Connect unary: application/proto junk, application/json junk and deep JSON. */
  connectUnary(method: DescMethod): fc.Arbitrary<RpcCase> {
    const proto = fc.tuple(this.payload(method), this.authArb).map(([{ bytes, note }, auth]): RpcCase => ({
      kind: "connect-unary-proto",
      method,
      auth,
      body: bytes,
      contentType: "application/proto",
      expect: decodes(method.input, bytes) ? "any" : "invalid",
      note,
    }));
    const junkText = fc.oneof(
      fc.constantFrom("{", "{]", "nul", "{'a': 1}", "[1,", '{"a":', "\u0000", "{}}", '"', "\ufeff{", "{\"a\": tru}", "1e309x", "<xml/>"),
      fc.string({ maxLength: 80 }).filter((s) => { try { JSON.parse(s); return false; } catch { return true; } }),
      fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b).toString("latin1")).filter((s) => { try { JSON.parse(s); return false; } catch { return true; } }),
    );
    const wrongJson = fc.constantFrom('{"messages": 5}', '{"modelId": {}}', '{"model_id": [1]}', '{"limit": "ten"}', '{"limit": 1e309}', '{"seed": "x"}', '{"steps": {"a": 1}}', "[]", "5", "null", '"x"', '{"maxTokens": 1.5}', '{"trajectoryGroups": [5]}', '{"limit": 99999999999}');
    const json = fc.tuple(fc.oneof({ arbitrary: junkText.map((text) => ({ text, note: "junk JSON text" })), weight: 3 }, { arbitrary: wrongJson.map((text) => ({ text, note: "JSON of wrong shape" })), weight: 2 }), this.authArb).map(([{ text, note }, auth]): RpcCase => ({
      kind: "connect-unary-json",
      method,
      auth,
      body: Buffer.from(text, "latin1"),
      contentType: "application/json",
      expect: decodesJson(method.input, text) ? "any" : "invalid",
      note,
    }));
    return fc.oneof({ arbitrary: proto, weight: 4 }, { arbitrary: json, weight: 3 }, { arbitrary: this.deepJson(method), weight: 1 });
  }

  /** JSON nested 100 to 10,000 levels, at a Struct or Value field where the message has one. */
  deepJson(method: DescMethod): fc.Arbitrary<RpcCase> {
    const structField = method.input.fields.find((f) => f.fieldKind === "message" && (f.message.typeName === "google.protobuf.Struct" || f.message.typeName === "google.protobuf.Value"));
    return fc.tuple(fc.constantFrom(100, 1_000, 10_000), fc.constantFrom("array", "object", "mixed") as fc.Arbitrary<"array" | "object" | "mixed">, fc.constantFrom("field", "unknown", "top")).map(([depth, shape, where]): RpcCase => {
      const deep = deepJson(depth, shape);
      const text =
        where === "top" ? deep : where === "field" && structField ? `{"${structField.jsonName}": ${structField.message?.typeName === "google.protobuf.Struct" ? `{"a": ${deep}}` : deep}}` : `{"fuzzUnknown": ${deep}}`;
      return { kind: "connect-deep-json", method, auth: "a", body: Buffer.from(text), contentType: "application/json", expect: "any", note: `JSON ${depth} deep (${shape}, ${where}${where === "field" && structField ? ` ${structField.name}` : ""})` };
    });
  }

  /** Junk envelopes, for Connect streaming, gRPC-Web and gRPC over HTTP/2 (kind decides the framing). */
  frames(method: DescMethod, kind: "connect-stream" | "grpc-web" | "grpc-h2-frame"): fc.Arbitrary<RpcCase> {
    const framing = fc.tuple(this.payload(method), fc.constantFrom("single", "single", "single", "truncated", "truncated", "partial-header", "compressed", "compressed", "two", "none", "end-flag", "huge-length", "trailing-junk")).map(([{ bytes, note }, shape]) => {
      const ok = decodes(method.input, bytes);
      switch (shape) {
        case "single":
          return { body: envelope(0, bytes), expect: ok ? ("any" as const) : ("invalid" as const), note: `one envelope: ${note}` };
        case "truncated":
          return { body: envelope(0, bytes, bytes.length + 1 + (bytes[0] ?? 0)), expect: "invalid" as const, note: `envelope shorter than its length: ${note}` };
        case "partial-header":
          return { body: Buffer.from([0, 0, bytes.length % 256]), expect: "invalid" as const, note: "3 bytes of an envelope header" };
        case "compressed":
          return { body: envelope(1, bytes), expect: "any" as const, note: `compressed flag without an encoding: ${note}` };
        case "two":
          return { body: Buffer.concat([envelope(0, bytes), envelope(0, bytes)]), expect: "any" as const, note: `two envelopes: ${note}` };
        case "none":
          return { body: Buffer.alloc(0), expect: "any" as const, note: "no envelope" };
        case "end-flag":
          return { body: envelope(kind === "grpc-web" ? 0x80 : 0x02, bytes), expect: "any" as const, note: `an end-of-stream/trailer envelope from the client: ${note}` };
        case "huge-length":
          return { body: envelope(0, bytes, 0x7fffffff), expect: "any" as const, note: "envelope declaring 2 GiB" };
        default:
          return { body: Buffer.concat([envelope(0, bytes), Buffer.from([0x00, 0x00])]), expect: "any" as const, note: `an envelope and 2 stray bytes: ${note}` };
      }
    });
    const contentType = kind === "connect-stream" ? "application/connect+proto" : kind === "grpc-web" ? "application/grpc-web+proto" : "application/grpc";
    return fc.tuple(framing, this.authArb).map(([f, auth]): RpcCase => ({ kind, method, auth, body: f.body, contentType, expect: f.expect, note: f.note }));
  }

  /** Random bytes as the one message, through @grpc/grpc-js. */
  grpcJunk(method: DescMethod): fc.Arbitrary<RpcCase> {
    return fc.tuple(this.payload(method), this.authArb).map(([{ bytes, note }, auth]): RpcCase => ({ kind: "grpc-js-junk", method, auth, body: bytes, expect: decodes(method.input, bytes) ? "any" : "invalid", note }));
  }

  /** Well-typed random messages through the clients real users have. */
  typed(method: DescMethod, kind: "typed-connect-json" | "typed-connect-binary" | "typed-grpc-web" | "typed-grpc"): fc.Arbitrary<RpcCase> {
    const isChat = method.parent.typeName === "srl.v1.Inference";
    return fc.tuple(this.inits.message(method.input), this.authArb, fc.integer({ min: 1, max: 4 })).map(([init, auth, tokens]): RpcCase => ({
      kind,
      method,
      auth,
      init: isChat ? cheapenChatInit(init, tokens) : init,
      expect: "any",
      note: "well-typed random message",
    }));
  }
}

// --- Sending and reading answers. -------------------------------------------------------------------

function codeName(n: number): string {
  return CODE_NAMES[n] ?? `?grpc-${n}`;
}

/** Envelopes of a body: flags and payload each; `rest` is what did not form a whole envelope. */
function readEnvelopes(body: Buffer): { envelopes: { flags: number; data: Buffer }[]; rest: number } {
  const envelopes: { flags: number; data: Buffer }[] = [];
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at] ?? 0;
    const len = body.readUInt32BE(at + 1);
    if (at + 5 + len > body.length) break;
    envelopes.push({ flags, data: body.subarray(at + 5, at + 5 + len) });
    at += 5 + len;
  }
  return { envelopes, rest: body.length - at };
}

function parseJsonCode(text: string): { code?: string; message?: string } {
  try {
    const parsed = JSON.parse(text) as { code?: unknown; message?: unknown };
    return { code: typeof parsed.code === "string" ? parsed.code : undefined, message: typeof parsed.message === "string" ? parsed.message : undefined };
  } catch {
    return {};
  }
}

function trailerStatus(text: string): { code?: number; message: string } {
  const status = /(?:^|\r\n)grpc-status:\s*(\d+)/i.exec(text);
  const message = /(?:^|\r\n)grpc-message:\s*([^\r\n]*)/i.exec(text);
  return { code: status?.[1] !== undefined ? Number(status[1]) : undefined, message: decodedOrAsIs(message?.[1] ?? "") };
}

export class RpcSender {
  private grpcClient: grpc.Client | undefined;
  private grpcTarget = "";
  private transports = new Map<string, Transport>();

  constructor(
    private readonly http: RawHttp,
    private readonly http2: RawHttp2,
    private readonly baseUrl: () => string,
    private readonly t: FuzzTargets,
  ) {}

  private keyOf(auth: RpcCase["auth"]): string | undefined {
    return auth === "none" ? undefined : this.t.key[auth];
  }

  async send(c: RpcCase): Promise<RpcOutcome> {
    switch (c.kind) {
      case "connect-unary-proto":
      case "connect-unary-json":
      case "connect-deep-json":
        return this.connectUnary(c);
      case "connect-stream":
      case "grpc-web":
        return this.enveloped(c);
      case "grpc-h2-frame":
        return this.h2Frame(c);
      case "grpc-js-junk":
        return this.grpcJs(c.method, c.body ?? Buffer.alloc(0), c.auth);
      case "typed-grpc": {
        const bytes = Buffer.from(toBinary(c.method.input, create(c.method.input, (c.init ?? {}) as MessageInitShape<DescMessage>)));
        return this.grpcJs(c.method, bytes, c.auth);
      }
      default:
        return this.typedConnect(c);
    }
  }

  private authHeaders(auth: RpcCase["auth"]): Record<string, string> {
    const key = this.keyOf(auth);
    return key ? { authorization: `Bearer ${key}` } : {};
  }

  private async connectUnary(c: RpcCase): Promise<RpcOutcome> {
    const res = await this.http.send({
      method: "POST",
      target: `/${c.method.parent.typeName}/${c.method.name}`,
      headers: { "content-type": c.contentType ?? "application/proto", "connect-protocol-version": "1", ...this.authHeaders(c.auth) },
      body: c.body,
    });
    if (res.error) return { code: "?no-answer", message: res.error };
    if (res.status === 200) return { code: "ok", httpStatus: 200, message: "" };
    const parsed = parseJsonCode(res.body.toString("utf8"));
    return { code: parsed.code ?? `?http-${res.status}-without-code`, httpStatus: res.status, message: parsed.message ?? res.body.toString("utf8").slice(0, 300) };
  }

  private async enveloped(c: RpcCase): Promise<RpcOutcome> {
    const grpcWeb = c.kind === "grpc-web";
    const res = await this.http.send({
      method: "POST",
      target: `/${c.method.parent.typeName}/${c.method.name}`,
      headers: { "content-type": c.contentType ?? "application/connect+proto", ...(grpcWeb ? { "x-grpc-web": "1" } : { "connect-protocol-version": "1" }), ...this.authHeaders(c.auth) },
      body: c.body,
      cutEventStream: false,
    });
    if (res.error) return { code: "?no-answer", message: res.error };
    if (grpcWeb) {
      const header = res.headers["grpc-status"];
      if (header !== undefined) return { code: codeName(Number(header)), httpStatus: res.status, message: decodedOrAsIs(String(res.headers["grpc-message"] ?? "")) };
      const trailer = readEnvelopes(res.body).envelopes.find((e) => (e.flags & 0x80) !== 0);
      if (!trailer) return { code: `?http-${res.status}-no-grpc-status`, httpStatus: res.status, message: res.body.toString("utf8").slice(0, 300) };
      const status = trailerStatus(trailer.data.toString("utf8"));
      return { code: status.code === undefined ? "?trailer-without-status" : codeName(status.code), httpStatus: res.status, message: status.message };
    }
    if (res.status !== 200) {
      const parsed = parseJsonCode(res.body.toString("utf8"));
      return { code: parsed.code ?? `?http-${res.status}-without-code`, httpStatus: res.status, message: parsed.message ?? res.body.toString("utf8").slice(0, 300) };
    }
    const end = readEnvelopes(res.body).envelopes.find((e) => (e.flags & 0x02) !== 0);
    if (!end) return { code: "?no-end-stream-message", httpStatus: 200, message: res.body.toString("latin1").slice(0, 300) };
    try {
      const parsed = JSON.parse(end.data.toString("utf8")) as { error?: { code?: unknown; message?: unknown } };
      if (!parsed.error) return { code: "ok", httpStatus: 200, message: "" };
      return { code: typeof parsed.error.code === "string" ? parsed.error.code : "?end-stream-error-without-code", httpStatus: 200, message: String(parsed.error.message ?? "") };
    } catch {
      return { code: "?end-stream-not-json", httpStatus: 200, message: end.data.toString("utf8").slice(0, 300) };
    }
  }

  private async h2Frame(c: RpcCase): Promise<RpcOutcome> {
    const res = await this.http2.send(`/${c.method.parent.typeName}/${c.method.name}`, { "content-type": "application/grpc", te: "trailers", ...this.authHeaders(c.auth) }, c.body ?? Buffer.alloc(0));
    const status = res.trailers["grpc-status"] ?? res.headers["grpc-status"];
    if (status === undefined) return { code: res.error ? "?no-answer" : `?http2-${res.headers[":status"]}-no-grpc-status`, message: res.error ?? res.body.toString("utf8").slice(0, 300) };
    return { code: codeName(Number(status)), httpStatus: Number(res.headers[":status"]), message: decodedOrAsIs(res.trailers["grpc-message"] ?? res.headers["grpc-message"] ?? "") };
  }

  private client(): grpc.Client {
    const target = new URL(this.baseUrl()).host;
    if (!this.grpcClient || this.grpcTarget !== target) {
      this.grpcClient?.close();
      this.grpcClient = new grpc.Client(target, grpc.credentials.createInsecure());
      this.grpcTarget = target;
    }
    return this.grpcClient;
  }

  private grpcJs(method: DescMethod, bytes: Buffer, auth: RpcCase["auth"]): Promise<RpcOutcome> {
    const metadata = new grpc.Metadata();
    const key = this.keyOf(auth);
    if (key) metadata.set("authorization", `Bearer ${key}`);
    const path = `/${method.parent.typeName}/${method.name}`;
    const serialize = (b: Buffer) => b;
    const deserialize = (b: Buffer) => b;
    const deadline = Date.now() + (method.name === "WatchTrainingJobEvents" ? 3_000 : 60_000);
    return new Promise<RpcOutcome>((resolve) => {
      if (method.methodKind === "unary") {
        this.client().makeUnaryRequest(path, serialize, deserialize, bytes, metadata, { deadline }, (error) => {
          resolve(error ? { code: codeName(error.code), message: error.details, ownCancel: error.code === grpc.status.DEADLINE_EXCEEDED && method.name === "WatchTrainingJobEvents" } : { code: "ok", message: "" });
        });
      } else {
        const call = this.client().makeServerStreamRequest(path, serialize, deserialize, bytes, metadata, { deadline });
        call.on("data", () => undefined);
        call.on("error", (error: grpc.ServiceError) => resolve({ code: codeName(error.code), message: error.details, ownCancel: error.code === grpc.status.DEADLINE_EXCEEDED && method.name === "WatchTrainingJobEvents" }));
        call.on("status", (status: grpc.StatusObject) => {
          if (status.code === grpc.status.OK) resolve({ code: "ok", message: "" });
        });
      }
    });
  }

  private transport(kind: RpcKind): Transport {
    const base = this.baseUrl();
    const key = `${kind}|${base}`;
    let transport = this.transports.get(key);
    if (!transport) {
      transport =
        kind === "typed-grpc-web"
          ? createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1" })
          : createConnectTransport({ baseUrl: base, httpVersion: "1.1", useBinaryFormat: kind === "typed-connect-binary" });
      this.transports.set(key, transport);
    }
    return transport;
  }

  private async typedConnect(c: RpcCase): Promise<RpcOutcome> {
    const transport = this.transport(c.kind);
    const key = this.keyOf(c.auth);
    const header = key ? { authorization: `Bearer ${key}` } : undefined;
    const input = (c.init ?? {}) as MessageInitShape<DescMessage>;
    if (c.kind === "typed-connect-json") {
      try {
        toJsonString(c.method.input, create(c.method.input, input));
      } catch (error) {
        return { code: "skipped", message: String(error), skipped: true };
      }
    }
    const abort = new AbortController();
    const watch = c.method.name === "WatchTrainingJobEvents";
    const timer = watch ? setTimeout(() => abort.abort(), 3_000) : undefined;
    try {
      const method = c.method;
      if (isUnary(method)) {
        await transport.unary(method, abort.signal, 60_000, header, input);
      } else if (isServerStreaming(method)) {
        const res = await transport.stream(method, abort.signal, 60_000, header, singleInput(input));
        for await (const _ of res.message) void _;
      }
      return { code: "ok", message: "" };
    } catch (error) {
      const e = ConnectError.from(error);
      return { code: codeName(e.code), message: e.rawMessage, ownCancel: abort.signal.aborted };
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.grpcClient?.close();
  }
}

const isUnary = (m: DescMethod): m is DescMethodUnary => m.methodKind === "unary";
const isServerStreaming = (m: DescMethod): m is DescMethodServerStreaming => m.methodKind === "server_streaming";

async function* singleInput<T>(value: T): AsyncIterable<T> {
  yield value;
}

/** What must hold of every Connect, gRPC-Web and gRPC answer. */
export function checkRpc(c: RpcCase, out: RpcOutcome): Violation[] {
  const v: Violation[] = [];
  if (out.ownCancel || out.skipped) return v;
  if (out.code.startsWith("?")) {
    v.push({ property: "answer without a readable status", detail: `${out.code}: ${out.message.slice(0, 200)}` });
    return v;
  }
  if (c.expect === "invalid" && out.code !== "invalid_argument") v.push({ property: "undecodable message not invalid_argument", detail: `got ${out.code}: ${out.message.slice(0, 200)}` });
  else if (out.code !== "ok" && !ALLOWED_CODES.has(out.code)) v.push({ property: `error code ${out.code}`, detail: out.message.slice(0, 200) });
  if (c.kind.startsWith("connect-unary") && c.expect === "invalid" && out.httpStatus !== 400) v.push({ property: "Connect parse failure not HTTP 400", detail: `HTTP ${out.httpStatus}` });
  return v;
}

/** A reproduction of an RPC case. */
export function describeRpc(c: RpcCase, out: RpcOutcome): string {
  const key = c.auth === "none" ? "no key" : `key of ${c.auth === "a" ? "the fuzz entity" : "the other entity"}`;
  const body = c.body ? `body (${c.body.length} bytes) hex ${c.body.subarray(0, 48).toString("hex")}${c.body.length > 48 ? "…" : ""}` : `message ${safeJson(c.init).slice(0, 300)}`;
  return `${rpcLabel(c)} [${c.note}] ${c.contentType ?? ""} ${key}; ${body} -> ${out.code}${out.httpStatus ? ` (HTTP ${out.httpStatus})` : ""}: ${out.message.slice(0, 300)}`;
}

function safeJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array ? `<${v.length} bytes>` : v)) ?? "undefined";
}

