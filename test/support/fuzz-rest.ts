// REST requests for the fuzz suite, generated per route from the google.api.http rules and the
// input descriptors, and the properties every answer must have (README "Errors", "Validation",
// "What errors echo", "Malformed requests", "Auth").
import fc from "fast-check";
import { getOption, hasOption, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { rest as restOption } from "../../gen/srl/v1/options_pb.js";
import type { RestRoute } from "../../services/gateway/rest/http-rules.js";
import { anyStringArb, arbitraryJsonArb, deepJson, isFuzzObject, jsonText, ONE_MIB_STRING, type FuzzJson } from "./fuzz-json.js";
import { cheapenChat, RAW_QUERY_PREFIX, type FuzzTargets, type JsonGen, type Owner, type Pools } from "./fuzz-messages.js";
import { decodedOrAsIs, type RawResponse } from "./fuzz-http.js";

export type AuthKind = "a" | "b" | "none" | "malformed";

export interface RestCase {
  /** The route ("POST /v1/preview/models") or "misc". */
  label: string;
  method: string;
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
  bodyKind: string;
  auth: AuthKind;
  /** The request names an existing route with well-formed path parameters and a target under 8 KiB. */
  routable: boolean;
  isPublic: boolean;
  /** Errors in OpenAI's shape (chat completions, when the route was matched). */
  openai: boolean;
  /** Path, and the query and body values that name objects (ids, urls, entity): for the cross-entity property. */
  naming: string;
  /** Paths that try to leave the console's directory. */
  traversal?: boolean;
  /** Stop reading 2xx event streams after the headers. */
  cutEventStream?: boolean;
  /** Sent over HTTP/2 (h2c, prior knowledge) instead of HTTP/1.1. */
  http2?: boolean;
  /** On a connection of its own (it declares a body far longer than it sends). */
  freshConnection?: boolean;
}

export const MAX_TARGET = 8192;

export function restRuleOf(method: DescMethod) {
  return hasOption(method, restOption) ? getOption(method, restOption) : undefined;
}

function authHeaderArb(t: FuzzTargets): fc.Arbitrary<{ auth: AuthKind; header?: string }> {
  const malformed = fc.oneof(
    fc.constantFrom("Bearer", "Bearer ", "Basic Zm9vOmJhcg==", `Token ${t.key.a}`, t.key.a, `Bearer ${t.key.a}x`, `Bearer ${t.key.a.slice(0, -1)}`, `Bearer ${t.key.a} extra`, "Bearer srl_", "Bearer \u00ff\u00fe", "Bearer %ZZ", `Bearer ${"A".repeat(4000)}`, "Bearer null", "Bearer undefined"),
    fc.string({ unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"), minLength: 43, maxLength: 43 }).map((s) => `Bearer srl_${s}`),
  );
  return fc.oneof(
    { arbitrary: fc.constant({ auth: "a" as const, header: `Bearer ${t.key.a}` }), weight: 6 },
    { arbitrary: fc.constant({ auth: "b" as const, header: `Bearer ${t.key.b}` }), weight: 2 },
    { arbitrary: fc.constant({ auth: "none" as const }), weight: 2 },
    { arbitrary: malformed.map((header) => ({ auth: "malformed" as const, header })), weight: 1 },
  );
}

interface PathValue {
  text: string;
  ok: boolean;
}

export const MALFORMED_ESCAPES = ["%ZZ", "%C0%AE", "%", "%E0%A4%A", "%2", "a%ZZb", "%FF", "%C0%80", "%ED%A0%80", "%F4%90%80%80"];

function pathParamArb(name: string, pools: Pools): fc.Arbitrary<PathValue> {
  const valid = name === "model_id" ? pools.modelId() : name === "run_id" ? pools.runId() : name === "training_job_id" ? pools.jobId() : pools.anyId();
  const enc = (arb: fc.Arbitrary<string>) => arb.map((s) => ({ text: encodeURIComponent(s), ok: s !== "" }));
  return fc.oneof(
    { arbitrary: enc(valid), weight: 10 },
    { arbitrary: enc(fc.uuid()), weight: 2 },
    { arbitrary: enc(anyStringArb), weight: 3 },
    { arbitrary: fc.constantFrom(...MALFORMED_ESCAPES).map((text) => ({ text, ok: false })), weight: 3 },
    {
      arbitrary: fc.constantFrom(".", "..", "%2e%2e", "%2F", "..%2F..%2Fetc%2Fpasswd", "%00", "%20", "null", "%24where", "%5Bobject%20Object%5D", "-1", "1e309", "%EF%BB%BF", "%F0%9F%99%82").map((text) => ({ text, ok: text !== "." && text !== ".." })),
      weight: 2,
    },
    { arbitrary: fc.constantFrom(3_000, 7_000, 9_000).map((n) => ({ text: "z".repeat(n), ok: n < 8_000 })), weight: 1 },
    { arbitrary: fc.constantFrom(800, 1_400).map((n) => ({ text: encodeURIComponent("é".repeat(n)), ok: true })), weight: 1 },
  );
}

/** Puts parameter values into a route template; `ok` when every one is well-formed. */
function fillTemplate(template: string, values: PathValue[]): { path: string; ok: boolean } {
  let i = 0;
  let ok = true;
  const path = template.replace(/\{[a-z_0-9]+(=\*\*)?\}/g, () => {
    const value = values[i++] ?? { text: "x", ok: true };
    ok &&= value.ok;
    return value.text;
  });
  return { path, ok };
}

function queryString(pairs: [string, string][]): string {
  if (pairs.length === 0) return "";
  const enc = (s: string) => (s.startsWith(RAW_QUERY_PREFIX) ? s.slice(RAW_QUERY_PREFIX.length) : encodeURIComponent(s));
  return "?" + pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join("&");
}

const CONTENT_TYPES = ["application/json", "", "text/plain", "multipart/form-data; boundary=junk", "application/json; charset=utf-8", "application/x-www-form-urlencoded", "application/octet-stream", "multipart/form-data", "application/json; charset=utf-16"];

const contentTypeArb = fc.oneof(
  { arbitrary: fc.constant("application/json"), weight: 10 },
  { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 3 },
);

const NAMING_FIELDS = ["model_id", "model", "entity", "training_data_url", "url", "training_job_id", "run_id"];

interface BodyChoice {
  kind: string;
  body?: Buffer;
  json?: FuzzJson;
}

const junkArb: fc.Arbitrary<BodyChoice> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => ({ kind: "junk-bytes", body: Buffer.from(b) })),
  fc.string({ maxLength: 200 }).map((s) => ({ kind: "junk-text", body: Buffer.from(s) })),
  fc.constantFrom(
    "{",
    "}",
    "[",
    '{"a"',
    '{"a":}',
    "{'a': 1}",
    "{a: 1}",
    "NaN",
    "Infinity",
    "-Infinity",
    "undefined",
    '{"a": 1,}',
    "[1,]",
    "01",
    "1.",
    ".5",
    "+1",
    "0x10",
    '"\\x41"',
    '"\\u12"',
    '"\u0001"',
    "\ufeff{}",
    "{}garbage",
    "{} {}",
    '{"a":1}\u0000',
    "/* c */ {}",
    "true",
    "null",
    '"just a string"',
    "[]",
    "1e309",
    "-1e309",
  ).map((s) => ({ kind: "junk-json", body: Buffer.from(s) })),
  fc.constant({ kind: "invalid-utf8", body: Buffer.concat([Buffer.from('{"project": "'), Buffer.from([0xff, 0xfe, 0xc0, 0xae]), Buffer.from('", "name": "x"}')]) }),
  fc.constant({ kind: "utf16-json", body: Buffer.from('\ufeff{"project": "p"}', "utf16le") }),
);

export class RestCases {
  constructor(
    private readonly gen: JsonGen,
    private readonly pools: Pools,
    private readonly t: FuzzTargets,
  ) {}

  /** Requests for one route of the REST surface. */
  forRoute(route: RestRoute): fc.Arbitrary<RestCase> {
    const input = route.method.input;
    const rule = restRuleOf(route.method);
    const isPublic = rule?.public ?? false;
    const isChat = route.service.typeName === "srl.v1.Inference";
    const pathFields = new Set(route.pathParams);
    const bodyFields = route.body === "*" ? new Set(input.fields.map((f) => f.name)) : new Set(route.body ? [route.body] : []);
    const queryFields = input.fields.filter((f) => !pathFields.has(f.name) && !bodyFields.has(f.name));

    const params = fc.tuple(...route.pathParams.map((name) => pathParamArb(name, this.pools)));
    const query = fc.tuple(
      fc.tuple(...queryFields.map((f) => fc.oneof({ arbitrary: fc.constant<string[] | null>(null), weight: 3 }, { arbitrary: this.gen.query(f), weight: 2 }).map((values) => (values ? values.map((v): [string, string] => [f.name, v]) : [])))),
      fc.oneof(
        { arbitrary: fc.constant<[string, string][]>([]), weight: 12 },
        { arbitrary: fc.array(fc.tuple(anyStringArb, anyStringArb), { minLength: 1, maxLength: 3 }), weight: 1 },
        { arbitrary: fc.constantFrom<[string, string][]>([[`${RAW_QUERY_PREFIX}%ZZ`, "1"]], [[`${RAW_QUERY_PREFIX}`, ""]], [["limit", `${RAW_QUERY_PREFIX}1&&&=&`]]), weight: 1 },
      ),
    ).map(([fields, extra]) => [...fields.flat(), ...extra]);

    const body = this.bodyFor(route, isChat);
    const chatBudget = fc.record({
      budget: fc.oneof({ arbitrary: fc.constant("small" as const), weight: 90 }, { arbitrary: fc.constant("medium" as const), weight: 8 }, { arbitrary: fc.constant("free" as const), weight: 2 }),
      tokens: fc.integer({ min: 1, max: 16 }),
    });

    const random = fc.record({ auth: authHeaderArb(this.t), params, query, body, contentType: contentTypeArb, chat: chatBudget });
    const plausible = fc.record({
      auth: fc.oneof({ arbitrary: fc.constant({ auth: "a" as AuthKind, header: `Bearer ${this.t.key.a}` }), weight: 17 }, { arbitrary: fc.constant({ auth: "b" as AuthKind, header: `Bearer ${this.t.key.b}` }), weight: 3 }),
      params: fc.tuple(...route.pathParams.map((name) => this.gen.right(fieldNamed(input, name), "plausible", 0).map((v): PathValue => ({ text: encodeURIComponent(String(v)), ok: true })))),
      query: fc.tuple(...queryFields.map((f) => this.gen.plausibleQuery(f).map((values) => values.map((v): [string, string] => [f.name, v])))).map((fields) => fields.flat()),
      body: this.plausibleBody(route, isChat),
      contentType: fc.constant("application/json"),
      chat: chatBudget,
    });
    const transport = fc.record({
      http2: fc.oneof({ arbitrary: fc.constant(false), weight: 6 }, { arbitrary: fc.constant(true), weight: 1 }),
      // A Content-Length far over the body limit, with a small body (refused before reading it).
      overLimit: fc.oneof({ arbitrary: fc.constant(false), weight: 40 }, { arbitrary: fc.constant(true), weight: route.body === "" ? 0 : 1 }),
    });
    return fc.tuple(fc.oneof({ arbitrary: random, weight: 65 }, { arbitrary: plausible, weight: 35 }), transport).map(([{ auth, params: values, query: pairs, body: choice, contentType, chat }, { http2, overLimit }]) => {
      const { path, ok } = fillTemplate(route.template, values);
      const target = path + queryString(pairs);
      let bodyBuffer = choice.body;
      let json = choice.json;
      if (json !== undefined) {
        if (isChat) json = cheapenChat(json, chat.budget, chat.tokens);
        bodyBuffer = Buffer.from(jsonText(json));
      }
      const headers: Record<string, string> = {};
      if (auth.header !== undefined) headers.authorization = auth.header;
      if (overLimit) {
        headers["content-length"] = "99999999999";
        bodyBuffer ??= Buffer.from("{}");
      }
      if (bodyBuffer !== undefined && contentType !== "") headers["content-type"] = choice.kind.startsWith("multipart") ? (contentType.startsWith("multipart") ? contentType : `multipart/form-data; boundary=${BOUNDARY}`) : contentType;
      const named: FuzzJson[] = values.map((v) => v.text);
      for (const [k, v] of pairs) if (NAMING_FIELDS.includes(k)) named.push(v);
      if (isFuzzObject(json)) for (const f of NAMING_FIELDS) if (json[f] !== undefined) named.push(json[f] ?? null);
      return {
        label: `${route.verb} ${route.template}`,
        method: route.verb,
        target,
        headers,
        body: bodyBuffer,
        bodyKind: choice.kind,
        auth: auth.auth,
        routable: ok && target.length <= MAX_TARGET,
        isPublic,
        openai: rule?.openaiErrors ?? false,
        naming: named.map((n) => (typeof n === "string" ? `${decodedOrAsIs(n)} ${JSON.stringify(decodedOrAsIs(n))}` : jsonText(n))).join(" "),
        cutEventStream: route.method.methodKind === "server_streaming" && !isChat,
        // HTTP/2 itself refuses a DATA length that differs from content-length (PROTOCOL_ERROR).
        http2: http2 && !overLimit,
        freshConnection: overLimit,
      } satisfies RestCase;
    });
  }

  /** What a client would send: plausible JSON, or for uploads a file or a well-formed form. */
  private plausibleBody(route: RestRoute, isChat: boolean): fc.Arbitrary<BodyChoice> {
    if (route.body === "") return fc.constant<BodyChoice>({ kind: "none" });
    if (route.body !== "*") {
      const file = '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n';
      const form = fc.record({ files: fc.integer({ min: 1, max: 2 }), fields: fc.subarray(["project=fz-form", "name=fz-form", "type=dataset", "version=0"]) }).map(({ files, fields }) => {
        const parts = fields.map((f) => { const [k, v] = f.split("="); return `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`; });
        for (let i = 0; i < files; i++) parts.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${i === 0 ? "train.jsonl" : "metadata.json"}"\r\nContent-Type: application/octet-stream\r\n\r\n${file}\r\n`);
        return { kind: "multipart-plausible", body: Buffer.from(parts.join("") + `--${BOUNDARY}--\r\n`) } satisfies BodyChoice;
      });
      return fc.oneof(fc.constant<BodyChoice>({ kind: "raw-file", body: Buffer.from(file) }), form);
    }
    const json = this.gen.message(route.method.input, "plausible", 0, new Set(route.pathParams));
    const streaming = isChat && route.method.methodKind === "server_streaming";
    return fc.tuple(json, fc.boolean()).map(([j, stream]) => ({ kind: "plausible", json: streaming && stream && isFuzzObject(j) ? { ...j, stream: true } : j }));
  }

  private bodyFor(route: RestRoute, isChat: boolean): fc.Arbitrary<BodyChoice> {
    const input = route.method.input;
    if (route.body === "") {
      return fc.oneof({ arbitrary: fc.constant<BodyChoice>({ kind: "none" }), weight: 12 }, { arbitrary: junkArb, weight: 1 }, { arbitrary: arbitraryJsonArb.map((json) => ({ kind: "json-on-bodiless", json })), weight: 1 });
    }
    if (route.body !== "*") return this.uploadBody(route);
    const exclude = new Set(route.pathParams);
    const valid = this.gen.message(input, "valid", 0, exclude);
    const chaotic = this.gen.message(input, "chaotic", 0, exclude);
    const streamFlag = (arb: fc.Arbitrary<FuzzJson>) =>
      isChat && route.method.methodKind === "server_streaming" ? fc.tuple(arb, fc.boolean()).map(([j, s]) => (isFuzzObject(j) && s ? { ...j, stream: true } : j)) : arb;
    return fc.oneof(
      { arbitrary: streamFlag(valid).map((json) => ({ kind: "structured-valid", json })), weight: 35 },
      { arbitrary: streamFlag(chaotic).map((json) => ({ kind: "structured-chaotic", json })), weight: 30 },
      { arbitrary: arbitraryJsonArb.map((json) => ({ kind: "arbitrary-json", json })), weight: 7 },
      { arbitrary: junkArb, weight: 8 },
      { arbitrary: fc.tuple(valid, fc.nat()).map(([json, n]) => { const text = jsonText(json); return { kind: "truncated-json", body: Buffer.from(text.slice(0, n % Math.max(1, text.length))) }; }), weight: 8 },
      { arbitrary: fc.record({ depth: fc.oneof(fc.integer({ min: 60, max: 140 }), fc.integer({ min: 500, max: 5_000 })), open: fc.boolean(), wrap: fc.boolean() }).map(({ depth, open, wrap }) => ({ kind: "deep", body: Buffer.from(wrap ? `{"messages": ${deepJson(depth, "mixed", !open)}}` : deepJson(depth, "object", !open)) })), weight: 3 },
      { arbitrary: fc.constantFrom<BodyChoice>({ kind: "empty", body: Buffer.alloc(0) }, { kind: "whitespace", body: Buffer.from(" \r\n\t ") }, { kind: "none" }), weight: 4 },
      { arbitrary: fc.constant<BodyChoice>({ kind: "huge-string", json: { ...Object.fromEntries(input.fields.slice(0, 3).map((f) => [f.name, ONE_MIB_STRING])) } }), weight: 1 },
    );
  }

  /** CreateArtifact: the raw file, or a multipart form (well-formed or not). */
  private uploadBody(route: RestRoute): fc.Arbitrary<BodyChoice> {
    const partName = fc.oneof({ arbitrary: fc.constantFrom("project", "name", "type", "filename", "version", "entity", "file", "files", "content"), weight: 5 }, { arbitrary: anyStringArb, weight: 1 });
    const part = fc.record({
      name: partName,
      filename: fc.option(fc.oneof(fc.constantFrom("train.jsonl", "metadata.json", "../../etc/x", "a\"b", "", "é.txt", "x".repeat(300)), anyStringArb), { nil: undefined }),
      value: fc.oneof(fc.constantFrom("fz-proj", "fz-name", "dataset", "0", "-1", "1e309", '{"messages": []}\n'), anyStringArb),
      headerJunk: fc.oneof({ arbitrary: fc.constant(""), weight: 8 }, { arbitrary: fc.constantFrom("Content-Type: text/plain\r\n", "X: y\r\n", "Content-Disposition: attachment\r\n", ": \r\n"), weight: 1 }),
    });
    const multipart = fc.record({ parts: fc.array(part, { maxLength: 5 }), ending: fc.constantFrom("--\r\n", "--", "", "\r\n", "--junk") }).map(({ parts, ending }) => {
      const chunks = parts.map((p) => {
        const disp = p.filename === undefined ? `form-data; name="${p.name}"` : `form-data; name="${p.name}"; filename="${p.filename}"`;
        return `--${BOUNDARY}\r\n${p.headerJunk}Content-Disposition: ${disp}\r\n\r\n${p.value}\r\n`;
      });
      return { kind: "multipart", body: Buffer.from(chunks.join("") + `--${BOUNDARY}${ending}`) } satisfies BodyChoice;
    });
    return fc.oneof(
      { arbitrary: fc.constantFrom('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n', "not json\n", "", "\u0000\u0001").map((s) => ({ kind: "raw-file", body: Buffer.from(s) })), weight: 4 },
      { arbitrary: multipart, weight: 5 },
      { arbitrary: junkArb, weight: 2 },
      { arbitrary: this.gen.message(route.method.input, "chaotic").map((json) => ({ kind: "structured-chaotic", json })), weight: 2 },
    );
  }

  /** Paths outside the API, and wrong verbs on real ones. */
  misc(routes: RestRoute[]): fc.Arbitrary<RestCase> {
    const fixed = [
      "/",
      "/%ZZ",
      "/../../etc/passwd",
      "/assets/%2e%2e%2f",
      "/assets/%2e%2e%2f%2e%2e%2f%2e%2e%2fpackage.json",
      "/assets/..%2f..%2f..%2fpackage.json",
      "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
      "/..%2f..%2f..%2f..%2fetc%2fpasswd",
      "/assets/../../../../etc/passwd",
      "/%C0%AE%C0%AE/%C0%AE%C0%AE/etc/passwd",
      "/assets/%00",
      "/index.html%00.js",
      "/index.html",
      "/favicon.ico",
      "/assets/",
      "/v1",
      "/v1/",
      "/v1/preview",
      "/v1/preview/",
      "/v1/preview/models/",
      "/v1/preview/models//checkpoints",
      "/v1//preview/models",
      "//v1/health",
      "/v1/health/",
      "/V1/HEALTH",
      "/v1/health%2F",
      "/v1/chat/completions//",
      "/v1/%ZZ",
      "/v1/preview/runs/%E0%A4%A",
      "/models/x",
      "/%",
      "/" + "a".repeat(9_000),
      "/a?" + "b".repeat(9_000),
      "/v1/preview/models?x=" + "c".repeat(17_000),
    ];
    const traversalOf = (path: string) => /\.\.|%2e|%C0%AE/i.test(path);
    const fixedCase = fc.tuple(fc.constantFrom(...fixed), fc.constantFrom("GET", "GET", "HEAD", "POST", "DELETE")).map(([path, method]) => ({ path, method }));
    const segment = fc.oneof(anyStringArb.map(encodeURIComponent), fc.constantFrom("v1", "preview", "models", "assets", "..", ".", "%2e", "%ZZ", "index.html"));
    const randomPath = fc.tuple(fc.constantFrom("/", "/v1/", "/v1/preview/", "/assets/"), fc.array(segment, { maxLength: 4 }), fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD")).map(([prefix, segs, method]) => ({ path: prefix + segs.join("/"), method }));
    const wrongVerb = fc.tuple(fc.constantFrom(...routes), fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD")).filter(([route, verb]) => !routes.some((r) => r.template === route.template && r.verb === verb)).map(([route, method]) => ({ path: fillTemplate(route.template, route.pathParams.map(() => ({ text: this.t.models.a[0]?.id ?? "x", ok: true }))).path, method }));
    return fc.record({
      where: fc.oneof({ arbitrary: fixedCase, weight: 4 }, { arbitrary: randomPath, weight: 3 }, { arbitrary: wrongVerb, weight: 3 }),
      auth: authHeaderArb(this.t),
      body: fc.oneof({ arbitrary: fc.constant<Buffer | undefined>(undefined), weight: 4 }, { arbitrary: fc.constantFrom(Buffer.from("{}"), Buffer.from("junk")), weight: 1 }),
      bigHeader: fc.oneof({ arbitrary: fc.constant(0), weight: 12 }, { arbitrary: fc.constantFrom(9_000, 17_000), weight: 1 }),
      http2: fc.oneof({ arbitrary: fc.constant(false), weight: 4 }, { arbitrary: fc.constant(true), weight: 1 }),
    }).map(({ where, auth, body, bigHeader, http2 }) => {
      const headers: Record<string, string> = {};
      if (bigHeader > 0) headers["x-fuzz-big"] = "h".repeat(bigHeader);
      if (auth.header !== undefined) headers.authorization = auth.header;
      if (body) headers["content-type"] = "application/json";
      return {
        label: "misc",
        method: where.method,
        target: where.path,
        headers,
        body,
        bodyKind: body ? "small" : "none",
        auth: auth.auth,
        routable: false,
        isPublic: true,
        openai: false,
        naming: "",
        traversal: traversalOf(where.path),
        cutEventStream: true,
        // Over HTTP/2, oversized headers are refused by the HTTP/2 layer (RST_STREAM), not answered.
        http2: http2 && bigHeader === 0 && where.path.length <= 16_000,
      } satisfies RestCase;
    });
  }
}

export const BOUNDARY = "fuzzBoundary7MA4YWxkTrZu0gW";

function fieldNamed(desc: DescMessage, name: string): DescField {
  const field = desc.fields.find((f) => f.name === name);
  if (!field) throw new Error(`${desc.typeName} has no field ${name}`);
  return field;
}

// --- Properties. ------------------------------------------------------------------------------------

export interface Violation {
  property: string;
  detail: string;
}

const MAX_ERROR_BODY = 64 * 1024;
const MAX_ECHO = 6 * 1024;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
const isObj = (v: Json | undefined): v is { [key: string]: Json } => typeof v === "object" && v !== null && !Array.isArray(v);

/** What must hold of every REST answer. `foreign` are the strings naming the other entity's objects. */
export function checkRest(c: RestCase, res: RawResponse, foreign: Record<Owner, string[]>): Violation[] {
  const out: Violation[] = [];
  const v = (property: string, detail = "") => out.push({ property, detail });
  if (res.status <= 0 || (res.error && !res.cut)) {
    v("no HTTP answer", res.error ?? "");
    return out;
  }
  const text = res.body.toString("utf8");
  if (res.status >= 500) v(`5xx answer`);
  const isError = res.status < 200 || res.status >= 300;
  if (isError && c.method !== "HEAD") {
    if (res.length > MAX_ERROR_BODY) v("error body larger than 64 KiB", `${res.length} bytes`);
    let body: Json | undefined;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      v("error body is not JSON", `content-type ${String(res.headers["content-type"])}`);
    }
    if (body !== undefined) {
      const detail = isObj(body) ? body.detail : undefined;
      if (res.status === 422) {
        if (!Array.isArray(detail) || detail.length === 0) v("422 body is not {detail: [...]}");
        else {
          for (const item of detail) {
            if (!isObj(item) || !Array.isArray(item.loc) || typeof item.msg !== "string" || typeof item.type !== "string") {
              v("422 detail item lacks loc/msg/type", JSON.stringify(item).slice(0, 200));
              break;
            }
            if (item.input !== undefined && JSON.stringify(item.input).length > MAX_ECHO) {
              v("422 input echo longer than 6 KiB", `${JSON.stringify(item.input).length} chars at ${JSON.stringify(item.loc).slice(0, 80)}`);
              break;
            }
          }
        }
      } else if (c.openai && (c.routable || !(typeof detail === "string"))) {
        // Requests that never reach the route (no such path, a target over the limit) may get the
        // generic {detail: string}; those that do, OpenAI's shape.
        const error = isObj(body) ? body.error : undefined;
        if (!isObj(error) || typeof error.message !== "string" || typeof error.type !== "string" || !("param" in error) || !("code" in error)) v("chat error is not {error: {message, type, param, code}}");
        // A validation error keeps FastAPI's list beside OpenAI's error.
        if (detail !== undefined && (!Array.isArray(detail) || detail.some((item) => !isObj(item) || !Array.isArray(item.loc) || typeof item.msg !== "string"))) v("OpenAI 400 detail is not a list of {loc, msg, type}");
      } else if (typeof detail !== "string") v("error body is not {detail: string}");
    }
  }
  if (!isError && c.method !== "HEAD" && String(res.headers["content-type"] ?? "").startsWith("application/json") && !res.cut) {
    try {
      JSON.parse(text);
    } catch {
      v("2xx JSON answer does not parse");
    }
  }
  if (res.status === 401 && !res.headers["www-authenticate"]) v("401 without WWW-Authenticate");
  if ((res.status === 429 || res.status === 503) && !res.headers["retry-after"]) v(`${res.status} without Retry-After`);
  if (c.routable && !c.isPublic && (c.auth === "none" || c.auth === "malformed") && res.status !== 401) v("unauthenticated request not answered 401");
  if ((c.auth === "a" || c.auth === "b") && res.status >= 200 && res.status < 300) {
    const other: Owner = c.auth === "a" ? "b" : "a";
    const hit = foreign[other].find((marker) => c.naming.includes(marker));
    if (hit) v("another entity's object answered 2xx", `names ${hit}`);
  }
  if (c.traversal && (text.includes("root:x:0:0") || text.includes('"name": "open-serverless-rl"'))) v("path traversal served a file outside the console");
  return out;
}
