// Property-based fuzzing of the W&B API surface (services/gateway/wandb-routes.ts) against a real
// server of this file's own (the fuzz harness: two entities with keys and a few real objects):
// generated GraphQL documents from the served schema (test/support/fuzz-wandb-graphql.ts) with
// random arguments, aliases, nesting, fragments, documents past every limit, token soup and junk
// variables; and transfer URLs (upload PUTs, download GETs) with random, forged, expired-looking
// and real tokens, random bodies and headers. Every answer must be < 500 and JSON when it is an
// error (the wandb SDK retries 5xx for minutes and reads error bodies), and the server must stay
// alive with no unhandled rejection. Fixed seed, bounded counts.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { servedSchema } from "../../services/wandb/graphql.js";
import { anyStringArb } from "../support/fuzz-json.js";
import { FuzzHarness, formatFailures, histogramText, type Failure } from "../support/fuzz-harness.js";
import { runPool, type RawRequest, type RawResponse } from "../support/fuzz-http.js";
import { GraphqlGen } from "../support/fuzz-wandb-graphql.js";

const SEED = 20_260_734;
const CONCURRENCY = 4;
const GRAPHQL_CASES = 1_500;
const TRANSFER_CASES = 600;
const BATCH_TIMEOUT_MS = 240_000;
const SDK_DOCUMENTS = fileURLToPath(new URL("../wandb/sdk-documents/", import.meta.url));

let h: FuzzHarness;
/** Real transfer URLs of entity A (paths only), made through the API as the SDK makes them. */
const transfer = { uploads: [] as string[], downloads: [] as string[], artifactIds: [] as string[] };
const basic = (key: string) => `Basic ${Buffer.from(`api:${key}`).toString("base64")}`;

async function graphql(key: string, query: string, variables: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await h.http.send({ method: "POST", target: "/graphql", headers: { "content-type": "application/json", authorization: basic(key) }, body: Buffer.from(JSON.stringify({ query, variables })) });
  const body = JSON.parse(res.body.toString("utf8")) as { data?: Record<string, unknown>; errors?: unknown };
  if (res.status !== 200 || !body.data) throw new Error(`fuzz setup: ${query.slice(0, 60)} answered ${res.status}: ${res.body.toString("utf8").slice(0, 300)}`);
  return body.data;
}

/** A run with a run file URL, and an artifact logged through upload URLs and committed. */
async function createTransferTargets(): Promise<void> {
  const key = h.targets.key.a;
  const entity = h.targets.entity.a;
  await graphql(key, `mutation ($e: String) { upsertBucket(input: {name: "fuzz-run", modelName: "pa", entityName: $e}) { bucket { id } } }`, { e: entity });
  const runFiles = await graphql(key, `mutation ($e: String!) { createRunFiles(input: {entityName: $e, projectName: "pa", runName: "fuzz-run", files: ["config.yaml"]}) { files { uploadUrl } } }`, { e: entity });
  transfer.uploads.push(...(runFiles.createRunFiles as { files: { uploadUrl: string }[] }).files.map((f) => new URL(f.uploadUrl).pathname));
  const content = '{"messages": []}\n';
  const md5 = createHash("md5").update(content).digest("base64");
  const created = await graphql(key, `mutation ($e: String!) { createArtifact(input: {entityName: $e, projectName: "pa", artifactTypeName: "dataset", artifactCollectionNames: ["fuzzdata"], digest: "fuzz-d1", digestAlgorithm: MANIFEST_MD5}) { artifact { id } } }`, { e: entity });
  const id = (created.createArtifact as { artifact: { id: string } }).artifact.id;
  transfer.artifactIds.push(id);
  const manifest = await graphql(key, `mutation ($id: ID!) { createArtifactManifest(input: {artifactID: $id, name: "wandb_manifest.json", digest: "", entityName: "e", projectName: "p", runName: "r"}) { artifactManifest { file { uploadUrl } } } }`, { id });
  const manifestUrl = new URL((manifest.createArtifactManifest as { artifactManifest: { file: { uploadUrl: string } } }).artifactManifest.file.uploadUrl).pathname;
  const files = await graphql(key, `mutation ($id: ID!, $md5: String!) { createArtifactFiles(input: {storageLayout: V2, artifactFiles: [{artifactID: $id, name: "train.jsonl", md5: $md5}]}) { files { edges { node { uploadUrl } } } } }`, { id, md5 });
  const fileUrl = new URL((files.createArtifactFiles as { files: { edges: { node: { uploadUrl: string } }[] } }).files.edges[0]?.node.uploadUrl as string).pathname;
  const put = async (target: string, body: string) => {
    const res = await h.http.send({ method: "PUT", target, headers: {}, body: Buffer.from(body) });
    if (res.status !== 200) throw new Error(`fuzz setup: PUT ${target.slice(0, 40)} answered ${res.status}`);
  };
  await put(fileUrl, content);
  await put(manifestUrl, JSON.stringify({ version: 1, storagePolicy: "wandb-storage-policy-v1", storagePolicyConfig: { storageLayout: "V2" }, contents: { "train.jsonl": { digest: md5, size: content.length } } }));
  await graphql(key, `mutation ($id: ID!) { commitArtifact(input: {artifactID: $id}) { artifact { id } } }`, { id });
  const view = await graphql(key, `query ($e: String) { project(name: "pa", entityName: $e) { artifact(name: "fuzzdata:latest") { files { edges { node { directUrl } } } currentManifest { file { directUrl } } } } }`, { e: entity });
  const artifact = (view.project as { artifact: { files: { edges: { node: { directUrl: string } }[] }; currentManifest: { file: { directUrl: string } } } }).artifact;
  transfer.downloads.push(...artifact.files.edges.map((edge) => new URL(edge.node.directUrl).pathname), new URL(artifact.currentManifest.file.directUrl).pathname);
  transfer.uploads.push(fileUrl, manifestUrl);
}

beforeAll(async () => {
  h = await FuzzHarness.start();
  await createTransferTargets();
}, 300_000);

afterAll(async () => {
  if (h && h.failures.length > 0) console.log(formatFailures(h.failures, 1));
  await h?.stop();
}, 120_000);

/** Sends the cases; every answer < 500, error bodies JSON; then the process must be healthy. */
async function batch(name: string, requests: { label: string; req: RawRequest }[]): Promise<Failure[]> {
  const failures: Failure[] = [];
  const histogram = new Map<string, number>();
  const t0 = performance.now();
  await runPool(requests, CONCURRENCY, async ({ label, req }) => {
    const res: RawResponse = await h.http.send(req);
    if (res.status === -1) return; // the client library would not send it
    const key = res.error ? "no-answer" : String(res.status);
    histogram.set(`${label} ${key}`, (histogram.get(`${label} ${key}`) ?? 0) + 1);
    const json = (res.headers["content-type"] ?? "").includes("json");
    const bad = res.error ? `no answer (${res.error})` : res.status >= 500 ? "a 5xx" : res.status >= 400 && !json ? "an error that is not JSON" : res.status === 429 && !res.headers["retry-after"] ? "a 429 without Retry-After" : null;
    if (bad) failures.push({ batch: name, property: `W&B API answered ${bad}`, label, status: key, repro: h.redact(h.describeRest(req, res, "raw")) });
  });
  console.log(`fuzz ${name}: ${requests.length} requests in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${histogramText(histogram)}`);
  h.failures.push(...failures);
  failures.push(...(await h.afterBatch(name)));
  return failures;
}

function assertNoFailures(name: string, failures: Failure[]): void {
  if (failures.length > 0) throw new Error(`${name}: ${formatFailures(failures)}`);
}

describe("W&B API fuzz", () => {
  it("GraphQL: generated documents, documents past the limits, soup and junk variables", async () => {
    const fixtures = readdirSync(SDK_DOCUMENTS, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".graphql")).map((f) => readFileSync(join(SDK_DOCUMENTS, f), "utf8"));
    const { entity, models } = h.targets;
    const gen = new GraphqlGen(servedSchema(), { entities: [entity.a, entity.b, "nobody"], projects: ["pa", "pb", "uncategorized"], runs: ["fuzz-run", ...models.a.map((m) => m.name), ...models.b.map((m) => m.name), ...models.a.map((m) => m.runId)], artifactIds: transfer.artifactIds }, fixtures);
    const auth = [basic(h.targets.key.a), basic(h.targets.key.b)];
    const cases = fc.sample(fc.tuple(gen.cases(), fc.nat(9)), { seed: SEED, numRuns: GRAPHQL_CASES });
    const requests = cases.map(([c, who]) => ({ label: c.label, req: { method: "POST", target: "/graphql", headers: { "content-type": "application/json", authorization: auth[who % 2] as string }, body: c.body } }));
    assertNoFailures("graphql", await batch("graphql", requests));
  }, BATCH_TIMEOUT_MS);

  it("transfer URLs: random, forged and real tokens, random bodies and headers", async () => {
    const forged = (payload: Record<string, unknown>) => `${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${Buffer.alloc(32, 7).toString("base64url")}`;
    const mutate = (path: string, i: number) => {
      const at = Math.min(path.length - 1, 16 + (i % Math.max(1, path.length - 16)));
      return `${path.slice(0, at)}${path[at] === "A" ? "B" : "A"}${path.slice(at + 1)}`;
    };
    const tokenArb = fc.oneof(
      fc.string({ maxLength: 120 }).map((t) => encodeURIComponent(t) || "x"),
      fc.base64String({ maxLength: 200 }).map((t) => t.replace(/[+/=]/g, "_") || "x"),
      fc.constantFrom(forged({ k: "artifact_file", a: "x", n: "f", m: "m", exp: 9e15 }), forged({ k: "run_file", exp: 1 }), forged({ k: "download", e: h.targets.entity.a, a: "x", n: "f", exp: 9e15 }), "a.b.c", ".", "..", "x".repeat(5000)),
    );
    const uploadTarget = fc.oneof(
      { weight: 3, arbitrary: tokenArb.map((t) => `/wandb/uploads/${t}`) },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...transfer.uploads), fc.nat()).map(([path, i]) => (i % 3 === 0 ? mutate(path, i) : path)) },
    );
    const downloadTarget = fc.oneof(
      { weight: 3, arbitrary: fc.tuple(tokenArb, fc.string({ maxLength: 40 })).map(([t, n]) => `/wandb/files/${t}/${encodeURIComponent(n) || "f"}`) },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...transfer.downloads), fc.nat()).map(([path, i]) => (i % 3 === 0 ? mutate(path, i) : path)) },
    );
    const body = fc.oneof(
      fc.constant(Buffer.alloc(0)),
      anyStringArb.map((t) => Buffer.from(t)),
      fc.uint8Array({ maxLength: 4096 }).map((bytes) => Buffer.from(bytes)),
      fc.nat(48 * 1024).map((n) => Buffer.alloc(n, 0x61)),
    );
    const headers = fc.record(
      {
        "content-type": fc.constantFrom("application/octet-stream", "application/json", "text/plain; charset=utf-8", "multipart/form-data; boundary=x", "", "\t"),
        authorization: fc.constantFrom(basic(h.targets.key.a), basic(h.targets.key.b), "Basic !!!", "Bearer x"),
        "content-md5": fc.constantFrom("", "AAAAAAAAAAAAAAAAAAAAAA==", "not base64"),
        "x-amz-meta-x": fc.string({ maxLength: 20 }).map((s) => s.replace(/[^\x20-\x7e]/g, "")),
      },
      { requiredKeys: [] },
    );
    const requestArb = fc.oneof(
      fc.record({ method: fc.constantFrom("PUT", "PUT", "PUT", "POST", "GET", "DELETE"), target: uploadTarget, headers, body }),
      fc.record({ method: fc.constantFrom("GET", "GET", "HEAD", "PUT"), target: downloadTarget, headers, body: fc.constant(Buffer.alloc(0)) }),
      // A body that says more than it sends, on a connection of its own: the server must answer
      // without it, from the token alone (not a token: 404), or from the declared size (a real
      // token, past the 64 MiB body limit or a manifest's 16 MiB: 413). A real token under its
      // limit waits for the body, as it should, so it is not sent here.
      fc.record({ method: fc.constant("PUT"), target: tokenArb.map((t) => `/wandb/uploads/${t}`), headers: headers.map((hs) => ({ ...hs, "content-length": String(60 * 2 ** 20) })), body: fc.constant(Buffer.alloc(1024, 0x62)) }).map((r) => ({ ...r, freshConnection: true })),
      fc.record({ method: fc.constant("PUT"), target: fc.constantFrom(...transfer.uploads), headers: headers.map((hs) => ({ ...hs, "content-length": String(65 * 2 ** 20) })), body: fc.constant(Buffer.alloc(1024, 0x62)) }).map((r) => ({ ...r, freshConnection: true })),
    );
    const cases = fc.sample(requestArb, { seed: SEED + 1, numRuns: TRANSFER_CASES });
    const requests = cases.map((c) => ({
      label: `${c.method} ${c.target.startsWith("/wandb/uploads/") ? "upload" : "download"}${"freshConnection" in c ? " (short body)" : ""}`,
      req: { method: c.method, target: c.target, headers: Object.fromEntries(Object.entries(c.headers).filter(([, v]) => v !== undefined && v !== "")) as Record<string, string>, body: c.body, freshConnection: "freshConnection" in c },
    }));
    assertNoFailures("transfer", await batch("transfer", requests));
  }, BATCH_TIMEOUT_MS);

  it("the process never exited and logged no unhandled rejection or uncaught exception", async () => {
    assertNoFailures("the process", await h.afterBatch("end"));
    expect(h.timesRevived).toBe(0);
  }, 60_000);
});
