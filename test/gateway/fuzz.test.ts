// Property-based fuzzing of the one port, against a real server of this file's own: every REST
// route (derived from the google.api.http rules, as the gateway derives them) with generated path
// parameters, query strings, bodies, headers and content types; paths outside the API and wrong
// verbs; junk and well-typed random messages on every RPC over Connect, gRPC-Web and gRPC. The seed
// is fixed and the counts bounded, so a run sends the same requests every time (ids aside: they
// are the run's own objects). What every answer must satisfy is in fuzz-rest.ts (checkRest) and
// fuzz-rpc.ts (checkRpc); the server must never exit or log an unhandled rejection or uncaught
// exception. Failures are grouped, each group with reproductions (method, target, headers, start of
// the body, the answer).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { Training } from "../../gen/srl/v1/training_pb.js";
import { Events } from "../../gen/srl/v1/events_pb.js";
import { restRoutes, type RestRoute } from "../../services/gateway/rest/http-rules.js";
import { anyStringArb, arbitraryJsonArb, deepJson, jsonText, ONE_MIB_STRING, type FuzzJson } from "../support/fuzz-json.js";
import { FuzzHarness, formatFailures, histogramText, type Failure } from "../support/fuzz-harness.js";
import { runPool, type RawResponse } from "../support/fuzz-http.js";
import { InitGen, JsonGen, Pools } from "../support/fuzz-messages.js";
import { checkRest, RestCases, type RestCase } from "../support/fuzz-rest.js";
import { checkRpc, describeRpc, envelope, RpcCases, RpcSender, type RpcCase, type RpcKind } from "../support/fuzz-rpc.js";

const SEED = 20_260_611;
const CONCURRENCY = 4;
const REST_PER_ROUTE = 100;
const REST_MISC = 300;
/** Per RPC method: junk and typed requests of each kind. */
const RPC_PER_KIND: Record<RpcKind, number> = {
  "connect-unary-proto": 3,
  "connect-unary-json": 3,
  "connect-deep-json": 1,
  "connect-stream": 6,
  "grpc-web": 4,
  "grpc-h2-frame": 3,
  "grpc-js-junk": 3,
  "typed-connect-json": 2,
  "typed-connect-binary": 2,
  "typed-grpc-web": 1,
  "typed-grpc": 2,
};
const BATCH_TIMEOUT_MS = 240_000;
const WANDB_CASES = 400;
const SDK_DOCUMENTS = fileURLToPath(new URL("../wandb/sdk-documents/", import.meta.url));

interface WandbCase {
  method: string;
  target: string;
  headers: Record<string, string>;
  body: Buffer;
}
/** FUZZ_VERBOSE=1 prints a few answers of each status per batch (to see what the generators reach). */
const VERBOSE = process.env.FUZZ_VERBOSE === "1";

const services: DescService[] = [Inference, Models, Training, Events];
const routes = restRoutes(services);
const isDelete = (r: RestRoute) => r.method.name === "DeleteModel";

let h: FuzzHarness;
let gen: JsonGen;
let pools: Pools;
let restCases: RestCases;
let rpcCases: RpcCases;
let sender: RpcSender;
const started = performance.now();

beforeAll(async () => {
  h = await FuzzHarness.start();
  pools = new Pools(h.targets);
  gen = new JsonGen(pools);
  restCases = new RestCases(gen, pools, h.targets);
  rpcCases = new RpcCases(new InitGen(pools));
  sender = new RpcSender(h.http, h.http2, () => h.url, h.targets);
}, 300_000);

afterAll(async () => {
  if (h) {
    const { rest, rpc } = h.tallies;
    console.log(
      [
        `fuzz: ${rest.count} REST requests in ${(rest.ms / 1000).toFixed(1)} s of batches; statuses: ${histogramText(rest.histogram)}`,
        `fuzz: ${rpc.count} Connect/gRPC-Web/gRPC requests in ${(rpc.ms / 1000).toFixed(1)} s of batches; codes: ${histogramText(rpc.histogram)}`,
        `fuzz: whole file ${((performance.now() - started) / 1000).toFixed(1)} s; server restarted after dying: ${h.timesRevived}`,
        h.serverErrors.size > 0 ? `fuzz: error lines in the server log:\n${[...h.serverErrors].map(([line, n]) => `  (x${n}) ${line}`).join("\n")}` : "fuzz: no error lines in the server log",
        h.failures.length > 0 ? formatFailures(h.failures, 1) : "fuzz: no failures",
      ].join("\n"),
    );
  }
  sender?.close();
  await h?.stop();
}, 120_000);

/** Fails the test with the grouped failures of one batch. */
function assertNoFailures(batch: string, failures: Failure[]): void {
  if (failures.length > 0) throw new Error(`${batch}: ${formatFailures(failures)}`);
}

async function restBatch(batch: string, cases: RestCase[]): Promise<Failure[]> {
  const failures: Failure[] = [];
  const histogram = new Map<string, number>();
  const t0 = performance.now();
  const foreign = { a: pools.markers("a"), b: pools.markers("b") };
  await runPool(cases, CONCURRENCY, async (c) => {
    const req = { method: c.method, target: c.target, headers: c.headers, body: c.body, cutEventStream: c.cutEventStream, freshConnection: c.freshConnection };
    const res: RawResponse = c.http2 ? await h.http2.request(req) : await h.http.send(req);
    if (res.status === -1) return; // the client library would not send it: not the server's doing
    const key = res.error && !res.cut ? "no-answer" : String(res.status);
    h.record(h.tallies.rest, key, 0);
    histogram.set(key, (histogram.get(key) ?? 0) + 1);
    if (VERBOSE && (histogram.get(key) ?? 0) <= 4) console.log(`  [${c.bodyKind}] ${h.describeRest(req, res, c.bodyKind).slice(0, 900)}`);
    for (const violation of checkRest(c, res, foreign)) {
      failures.push({ batch, property: violation.property, label: c.label, status: String(res.status), repro: `${violation.detail ? `(${violation.detail}) ` : ""}${c.http2 ? "[HTTP/2] " : ""}${h.describeRest(req, res, c.bodyKind)}` });
    }
  });
  h.tallies.rest.ms += performance.now() - t0;
  console.log(`fuzz ${batch}: ${cases.length} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${histogramText(histogram)}`);
  h.failures.push(...failures);
  failures.push(...(await h.afterBatch(batch)));
  return failures;
}

function restRouteTest(route: RestRoute, index: number) {
  const name = `${route.verb} ${route.template} (${route.method.parent.name}/${route.method.name})`;
  it(name, async () => {
    const cases = fc.sample(restCases.forRoute(route), { seed: SEED + index, numRuns: REST_PER_ROUTE });
    assertNoFailures(name, await restBatch(name, cases));
  }, BATCH_TIMEOUT_MS);
}

async function rpcBatch(batch: string, cases: RpcCase[]): Promise<Failure[]> {
  const failures: Failure[] = [];
  const histogram = new Map<string, number>();
  const t0 = performance.now();
  await runPool(cases, CONCURRENCY, async (c) => {
    let outcome;
    try {
      outcome = await sender.send(c);
    } catch (error) {
      outcome = { code: "?client-error", message: error instanceof Error ? error.message : String(error) };
    }
    const key = outcome.ownCancel ? "cancelled-by-us" : outcome.skipped ? "not-sendable" : outcome.code;
    h.record(h.tallies.rpc, key, 0);
    histogram.set(key, (histogram.get(key) ?? 0) + 1);
    for (const violation of checkRpc(c, outcome)) {
      // Grouped by protocol and outcome (the causes are per protocol); the method is in the reproduction.
      failures.push({ batch, property: violation.property, label: c.kind, status: outcome.code, repro: h.redact(`${violation.detail ? `(${violation.detail}) ` : ""}${describeRpc(c, outcome)}`) });
    }
  });
  h.tallies.rpc.ms += performance.now() - t0;
  console.log(`fuzz ${batch}: ${cases.length} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${histogramText(histogram)}`);
  h.failures.push(...failures);
  failures.push(...(await h.afterBatch(batch)));
  return failures;
}

function rpcCasesOf(method: DescMethod, seed: number): RpcCase[] {
  const out: RpcCase[] = [];
  const streaming = method.methodKind === "server_streaming";
  const take = (arb: fc.Arbitrary<RpcCase>, kind: RpcKind, n = RPC_PER_KIND[kind]) => out.push(...fc.sample(arb, { seed: seed + out.length, numRuns: n }));
  if (streaming) take(rpcCases.frames(method, "connect-stream"), "connect-stream");
  else {
    take(rpcCases.connectUnary(method).filter((c) => c.kind === "connect-unary-proto"), "connect-unary-proto");
    take(rpcCases.connectUnary(method).filter((c) => c.kind === "connect-unary-json"), "connect-unary-json");
    take(rpcCases.deepJson(method), "connect-deep-json");
  }
  take(rpcCases.frames(method, "grpc-web"), "grpc-web");
  take(rpcCases.frames(method, "grpc-h2-frame"), "grpc-h2-frame");
  take(rpcCases.grpcJunk(method), "grpc-js-junk");
  for (const kind of ["typed-connect-json", "typed-connect-binary", "typed-grpc-web", "typed-grpc"] as const) take(rpcCases.typed(method, kind), kind);
  return out;
}

async function stillServing(): Promise<void> {
  expect(h.iso.server.child.exitCode).toBeNull();
  expect(await h.healthy()).toBe(true);
}

describe("fixed cases from the security review", () => {
  it("a malformed percent-encoding in a path parameter is a 400 without a key, not a crash", async () => {
    for (const target of ["/v1/preview/runs/%ZZ", "/v1/preview/training-jobs/%C0%AE/events"]) {
      const res = await h.http.send({ method: "GET", target, headers: {} });
      expect(res.status, h.describeRest({ method: "GET", target, headers: {} }, res, "none")).toBe(400);
      expect(JSON.parse(res.body.toString("utf8"))).toMatchObject({ detail: expect.any(String) });
    }
    await stillServing();
  });

  it("a console path with a malformed escape is a 404", async () => {
    const res = await h.http.send({ method: "GET", target: "/%ZZ", headers: {} });
    expect(res.status).toBe(404);
    await stillServing();
  });

  it("a number no double holds (-1e309) is a 422 whose body is valid JSON", async () => {
    const modelId = h.targets.models.a[0]?.id ?? "3c90c3cc-0d44-4b50-8888-8dd25736052a";
    const req = { method: "POST", target: "/v1/preview/sft-training-jobs", headers: { authorization: `Bearer ${h.targets.key.a}`, "content-type": "application/json" }, body: Buffer.from(`{"model_id": "${modelId}", "config": -1e309}`) };
    const res = await h.http.send(req);
    expect(res.status, h.describeRest(req, res, "raw")).toBe(422);
    expect(() => JSON.parse(res.body.toString("utf8")), res.body.toString("utf8").slice(0, 300)).not.toThrow();
    await stillServing();
  });

  it("Connect application/proto junk is 400 invalid_argument", async () => {
    const res = await h.http.send({
      method: "POST",
      target: "/srl.v1.Models/CreateModel",
      headers: { "content-type": "application/proto", "connect-protocol-version": "1", authorization: `Bearer ${h.targets.key.a}` },
      body: Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.toString("utf8"))).toMatchObject({ code: "invalid_argument" });
    await stillServing();
  });

  it("a junk gRPC message is status 3 (invalid_argument), through grpc-js and as a hand-made frame", async () => {
    const junk: RpcCase = { kind: "grpc-js-junk", method: Models.method.createModel, auth: "a", body: Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), expect: "invalid", note: "junk" };
    expect((await sender.send(junk)).code).toBe("invalid_argument");
    const truncated: RpcCase = { ...junk, kind: "grpc-h2-frame", body: envelope(0, Buffer.from([0x0a, 0x01, 0x61]), 40), note: "frame shorter than its length" };
    const outcome = await sender.send(truncated);
    expect(outcome.code, describeRpc(truncated, outcome)).toBe("invalid_argument");
    await stillServing();
  });

  it("a 1 MiB name is refused with a 4xx whose body is under 8 KiB", async () => {
    const req = {
      method: "POST",
      target: "/v1/preview/models",
      headers: { authorization: `Bearer ${h.targets.key.a}`, "content-type": "application/json" },
      body: Buffer.from(JSON.stringify({ project: "pa", name: ONE_MIB_STRING, base_model: "tiny-chat" })),
    };
    const res = await h.http.send(req);
    expect(res.status, h.describeRest(req, res, "1 MiB name")).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.length).toBeLessThan(8 * 1024);
    await stillServing();
  });

  it("JSON nested 10,000 deep is a 422 saying it is nested too deeply", async () => {
    const req = { method: "POST", target: "/v1/preview/models", headers: { authorization: `Bearer ${h.targets.key.a}`, "content-type": "application/json" }, body: Buffer.from(deepJson(10_000, "object")) };
    const res = await h.http.send(req);
    expect(res.status, h.describeRest(req, res, "deep")).toBe(422);
    const body = JSON.parse(res.body.toString("utf8")) as { detail: { msg?: string; ctx?: { error?: string } }[] };
    expect(body.detail.some((d) => /deep|nest/i.test(`${d.msg ?? ""} ${d.ctx?.error ?? ""}`)), res.body.toString("utf8").slice(0, 300)).toBe(true);
    await stillServing();
  });
});

describe("REST fuzz: every route", () => {
  routes.forEach((route, index) => {
    if (!isDelete(route)) restRouteTest(route, index);
  });

  it("paths outside the API, traversal attempts and wrong verbs", async () => {
    const cases = fc.sample(restCases.misc(routes), { seed: SEED - 1, numRuns: REST_MISC });
    assertNoFailures("misc", await restBatch("misc", cases));
  }, BATCH_TIMEOUT_MS);
});

describe("Connect, gRPC-Web and gRPC fuzz: every method", () => {
  services.forEach((service, s) => {
    it(service.typeName, async () => {
      const cases = service.methods.flatMap((method, m) => rpcCasesOf(method, SEED + 1_000 * (s + 1) + 50 * m));
      assertNoFailures(service.typeName, await rpcBatch(service.typeName, cases));
    }, BATCH_TIMEOUT_MS);
  });
});

describe("W&B API fuzz (the wandb SDK's surface)", () => {
  const fixtures = readdirSync(SDK_DOCUMENTS, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".graphql")).map((f) => readFileSync(join(SDK_DOCUMENTS, f), "utf8"));

  function wandbCases(): fc.Arbitrary<WandbCase> {
    const a = h.targets;
    const runNames = [...a.models.a.map((m) => m.name), ...a.models.b.map((m) => m.name), "fuzz-run", "../x", "%2e%2e", "a".repeat(300)];
    const auth = fc.constantFrom<Record<string, string>>(
      { authorization: `Basic ${Buffer.from(`api:${a.key.a}`).toString("base64")}` },
      { authorization: `Basic ${Buffer.from(`api:${a.key.b}`).toString("base64")}` },
      { authorization: `Bearer ${a.key.a}` },
      { authorization: "Basic !!!" },
      {},
    );
    const json = (value: FuzzJson) => Buffer.from(jsonText(value));
    const graphqlBody = fc.oneof(
      arbitraryJsonArb.map(json),
      fc.record({ query: anyStringArb, variables: arbitraryJsonArb }).map(json),
      fc.record({ query: fc.constantFrom(...fixtures), variables: fc.dictionary(fc.constantFrom("id", "name", "entity", "project", "entityName", "projectName", "artifactID", "input", "files", "after", "first", "digest", "aliases", "metadata", "artifactFiles", "storageLayout"), arbitraryJsonArb, { maxKeys: 6 }) }).map(json),
      fc.constantFrom(Buffer.from("{"), Buffer.from(deepJson(5_000, "mixed")), Buffer.alloc(0)),
    );
    const streamBody = fc.oneof(
      arbitraryJsonArb.map(json),
      fc.record({ files: fc.dictionary(fc.constantFrom("wandb-history.jsonl", "wandb-summary.json", "wandb-events.jsonl", "output.log", "x"), fc.record({ offset: arbitraryJsonArb, content: fc.oneof(fc.array(anyStringArb, { maxLength: 4 }), fc.array(arbitraryJsonArb.map(jsonText), { maxLength: 4 }), arbitraryJsonArb) })), complete: arbitraryJsonArb, exitcode: arbitraryJsonArb }).map(json),
    );
    const segment = fc.oneof(fc.constantFrom(a.entity.a, a.entity.b, "p", "fuzz-proj", "%ZZ", "%2F"), anyStringArb.map((text) => encodeURIComponent(text).slice(0, 200) || "x"));
    return fc.oneof(
      fc.record({ method: fc.constant("POST"), target: fc.constant("/graphql"), headers: auth, body: graphqlBody }),
      fc.record({ method: fc.constant("POST"), target: fc.tuple(segment, segment, fc.oneof(fc.constantFrom(...runNames).map(encodeURIComponent), segment)).map(([e, p, r]) => `/files/${e}/${p}/${r}/file_stream`), headers: auth, body: streamBody }),
      fc.record({ method: fc.constantFrom("PUT", "GET", "HEAD", "POST"), target: fc.oneof(fc.string({ maxLength: 80 }).map((t) => `/wandb/uploads/${encodeURIComponent(t) || "x"}`), fc.string({ maxLength: 80 }).map((t) => `/wandb/files/${encodeURIComponent(t) || "x"}/f`), fc.constant("/wandb/files/eyJrIjoiZG93bmxvYWQiLCJleHAiOjk5OTk5OTk5OTk5OTl9.AAAA/x")), headers: auth, body: fc.oneof(fc.constant(Buffer.alloc(0)), anyStringArb.map((t) => Buffer.from(t))) }),
    );
  }

  it("GraphQL (junk, and the SDK's own documents with random variables), file streams and transfer URLs", async () => {
    const cases = fc.sample(wandbCases(), { seed: SEED + 77, numRuns: WANDB_CASES });
    const failures: Failure[] = [];
    const histogram = new Map<string, number>();
    await runPool(cases, CONCURRENCY, async (c) => {
      const req = { method: c.method, target: c.target, headers: { "content-type": "application/json", ...c.headers }, body: c.body };
      const res = await h.http.send(req);
      const key = res.error ? "no-answer" : String(res.status);
      histogram.set(key, (histogram.get(key) ?? 0) + 1);
      // Never a 5xx (the SDK retries those for minutes), and errors in JSON (the SDK reads them).
      const json = (res.headers["content-type"] ?? "").includes("json");
      const bad = res.error ? "no answer" : res.status >= 500 ? "a 5xx" : res.status !== 200 && !json ? "an error that is not JSON" : null;
      if (bad) failures.push({ batch: "wandb", property: `W&B API answered ${bad}`, label: c.target.split("/")[1] ?? "", status: key, repro: h.describeRest(req, res, "raw") });
    });
    console.log(`fuzz wandb: ${cases.length} requests; ${histogramText(histogram)}`);
    h.failures.push(...failures);
    failures.push(...(await h.afterBatch("wandb")));
    assertNoFailures("W&B API", failures);
  }, BATCH_TIMEOUT_MS);
});

describe("REST fuzz: deleting models (last, since it removes the targets)", () => {
  routes.forEach((route, index) => {
    if (isDelete(route)) restRouteTest(route, index);
  });
});

describe("the process", () => {
  it("never exited, still answers /v1/health, and logged no unhandled rejection or uncaught exception", async () => {
    const found = await h.afterBatch("end");
    const earlier = h.failures.filter((f) => f.property === "server process exited" || f.property.startsWith("log: "));
    assertNoFailures("the process", [...earlier.filter((f) => !found.includes(f)), ...found]);
    expect(h.timesRevived).toBe(0);
  }, 60_000);
});
