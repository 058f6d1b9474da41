// The W&B API under a tenant that asks too much (issue 34), against the real server: GraphQL
// queries refused by their shape before anything runs (400 aliases, depth, fields, introspection)
// while other requests are served, an entity over its cost budget answered 429 with Retry-After,
// an upload URL that is not a token refused before its body is read, W&B run ids scoped per
// entity, and fields too large to store refused with 413.
import { connect } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { baseUrl } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

const basic = (key: string) => `Basic ${Buffer.from(`api:${key}`).toString("base64")}`;
const MiB = 1024 * 1024;

interface GraphqlReply {
  status: number;
  headers: Headers;
  ms: number;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] };
}

async function graphql(key: string, query: string, variables: Record<string, unknown> = {}): Promise<GraphqlReply> {
  const started = performance.now();
  const res = await fetch(`${baseUrl()}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(key) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as GraphqlReply["body"];
  return { status: res.status, headers: res.headers, ms: performance.now() - started, body };
}

const upsert = `mutation ($name: String, $project: String, $entity: String, $config: JSONString, $summary: JSONString) {
  upsertBucket(input: {name: $name, modelName: $project, entityName: $entity, config: $config, summaryMetrics: $summary}) { bucket { id name historyLineCount } inserted } }`;
const resume = `query ($project: String, $entity: String, $name: String!) { model(name: $project, entityName: $entity) { bucket(name: $name, missingOk: true) { name historyLineCount summaryMetrics } } }`;

/**
 * PUTs `target` declaring a body of `declared` bytes over a raw socket: sends 64 KiB, waits for
 * the answer, then keeps sending (as a client with a body does) until the server closes the
 * connection, the body is all sent, or 10 s pass. What came back and how much was written.
 */
async function putUnread(target: string, declared: number): Promise<{ head: string; body: string; closed: boolean; written: number }> {
  const { hostname, port } = new URL(baseUrl());
  const socket = connect({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  let received = "";
  let written = 0;
  let closed = false;
  const answered = new Promise<void>((resolve) => {
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
      if (received.includes("\r\n\r\n")) resolve();
    });
  });
  const ended = new Promise<void>((resolve) => socket.once("close", () => ((closed = true), resolve())));
  socket.on("error", () => undefined); // the server stops reading: our writes fail, as they should
  socket.write(`PUT ${target} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${declared}\r\n\r\n`);
  socket.write(Buffer.alloc(64 * 1024, 1));
  written += 64 * 1024;
  await Promise.race([answered, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  const chunk = Buffer.alloc(256 * 1024, 2);
  const deadline = Date.now() + 10_000;
  while (!closed && written < declared && Date.now() < deadline) {
    const flushed = socket.write(chunk);
    written += chunk.length;
    if (!flushed) await Promise.race([new Promise((resolve) => socket.once("drain", resolve)), ended, new Promise((resolve) => setTimeout(resolve, 500))]);
  }
  await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  socket.destroy();
  const split = received.indexOf("\r\n\r\n");
  return { head: split >= 0 ? received.slice(0, split) : received, body: split >= 0 ? received.slice(split + 4) : "", closed, written };
}

describe("W&B API limits", () => {
  let a: { key: string; entity: string };
  let b: { key: string; entity: string };

  beforeAll(async () => {
    const ea = uniqueEntity("wbl-a");
    const eb = uniqueEntity("wbl-b");
    a = { entity: ea, key: await createKey(ea) };
    b = { entity: eb, key: await createKey(eb) };
  });

  describe("GraphQL cost analysis", () => {
    it("refuses a query with 400 aliases before running it, while another entity is served", async () => {
      const aliases = `query { ${Array.from({ length: 400 }, (_, i) => `r${i}: project(name: "p") { run(name: "x${i}") { id historyTail } }`).join(" ")} }`;
      const floods = Array.from({ length: 8 }, () => graphql(a.key, aliases));
      const neighbour = graphql(b.key, "query { viewer { entity } }");
      const [answers, other] = await Promise.all([Promise.all(floods), neighbour]);
      for (const answer of answers) {
        expect(answer.status).toBe(400);
        expect(answer.body.errors?.[0]?.extensions?.code).toBe("ALIAS_LIMIT");
        expect(answer.body.errors?.[0]?.message).toContain("400 aliases; at most 30");
        expect(answer.body.data).toBeUndefined(); // nothing ran
      }
      expect(other).toMatchObject({ status: 200, body: { data: { viewer: { entity: b.entity } } } });
      // Refused by its shape: far quicker than 400 database lookups would be on a loaded machine.
      expect(Math.min(...answers.map((answer) => answer.ms))).toBeLessThan(2_000);
    });

    it("refuses too deep and too wide queries and a query over the cost limit as GraphQL errors", async () => {
      const deep = `query { project(name: "p") { artifact(name: "x") { ${"artifactSequence { latestArtifact { ".repeat(8)}id${" } }".repeat(8)} } } }`;
      expect((await graphql(a.key, deep)).body.errors?.[0]?.extensions?.code).toBe("DEPTH_LIMIT");
      const wide = `query { viewer { ${"id ".repeat(600)} } }`;
      const wideAnswer = await graphql(a.key, wide);
      expect(wideAnswer.status).toBe(400);
      expect(wideAnswer.body.errors?.[0]?.extensions?.code).toBe("FIELD_LIMIT");
      const costly = `query { project(name: "p") { artifactCollection(name: "c") { artifacts(first: 100) { edges { node { files(first: 100) { edges { node { name url } } } } } } } } }`;
      const costlyAnswer = await graphql(a.key, costly);
      expect(costlyAnswer.status).toBe(400);
      expect(costlyAnswer.body.errors?.[0]).toMatchObject({ extensions: { code: "COST_LIMIT" } });
      expect(costlyAnswer.body.errors?.[0]?.message).toContain("at most 25000");
    });

    it("serves the SDK's __type probes and __typename, and not __schema", async () => {
      const probe = await graphql(a.key, `query { RunType: __type(name: "Run") { fields { name } } }`);
      expect(probe.status).toBe(200);
      expect((probe.body.data?.RunType as { fields: { name: string }[] }).fields.map((f) => f.name)).toContain("historyTail");
      expect(await graphql(a.key, "query { __typename viewer { __typename } }")).toMatchObject({ status: 200, body: { data: { __typename: "Query", viewer: { __typename: "User" } } } });
      const schema = await graphql(a.key, "query { __schema { types { name fields { name } } } }");
      expect(schema.status).toBe(400);
      expect(schema.body.errors?.[0]).toMatchObject({ extensions: { code: "INTROSPECTION_DISABLED" } });
    });

    it("answers 429 with Retry-After once an entity has spent its budget, and only that entity", async () => {
      const spender = uniqueEntity("wbl-spender");
      const key = await createKey(spender);
      // About 15,000 each (a full page of files): the default budget (300,000 a minute) pays about 20.
      const heavy = `query ($first: Int) { artifact(id: "QXJ0aWZhY3Q6bm9uZQ==") { files(first: $first) { edges { node { id name displayName url directUrl uploadUrl storagePath sizeBytes mimetype updatedAt digest md5 uploadHeaders } } } } }`;
      const statuses: number[] = [];
      let limited: GraphqlReply | null = null;
      for (let i = 0; i < 40 && !limited; i++) {
        const answer = await graphql(key, heavy, { first: 1000 });
        statuses.push(answer.status);
        if (answer.status === 429) limited = answer;
      }
      expect(statuses.slice(0, 10).every((status) => status === 200)).toBe(true);
      expect(limited).not.toBeNull();
      const retryAfter = Number(limited?.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(limited?.body.errors?.[0]).toMatchObject({ extensions: { code: "RATE_LIMITED" } });
      expect(limited?.body.errors?.[0]?.message).toContain("cost budget");
      // Another entity is not charged for it.
      expect((await graphql(b.key, heavy, { first: 1000 })).status).toBe(200);
    });
  });

  describe("upload URLs", () => {
    it("refuses a PUT to a URL that is not a token before reading its body, and closes the connection", async () => {
      const sent = await putUnread("/wandb/uploads/not-a-token", 60 * MiB);
      expect(sent.head).toMatch(/^HTTP\/1\.1 404 /);
      expect(sent.head.toLowerCase()).toContain("connection: close");
      expect(sent.closed).toBe(true);
      // Socket buffers on both sides hold a few MiB at most; the rest was never read.
      expect(sent.written).toBeLessThan(24 * MiB);
    });

    it("refuses a tampered token and answers with JSON, and a fetch client sees the 404", async () => {
      const res = await fetch(`${baseUrl()}/wandb/uploads/eyJrIjoiYXJ0aWZhY3RfZmlsZSJ9.AAAA`, { method: "PUT", body: Buffer.alloc(2 * MiB) });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: string }).error).toContain("invalid or has expired");
    });

    it("bounds a manifest upload by the size its token grants", async () => {
      const create = await graphql(
        a.key,
        `mutation ($entity: String!) { createArtifact(input: {entityName: $entity, projectName: "p", artifactTypeName: "dataset", artifactCollectionNames: ["big"], digest: "d-big", digestAlgorithm: MANIFEST_MD5}) { artifact { id } } }`,
        { entity: a.entity },
      );
      const id = (create.body.data?.createArtifact as { artifact: { id: string } }).artifact.id;
      const manifest = await graphql(a.key, `mutation ($id: ID!) { createArtifactManifest(input: {artifactID: $id, name: "wandb_manifest.json", digest: "", entityName: "e", projectName: "p", runName: "r"}) { artifactManifest { file { uploadUrl } } } }`, { id });
      const url = new URL((manifest.body.data?.createArtifactManifest as { artifactManifest: { file: { uploadUrl: string } } }).artifactManifest.file.uploadUrl);
      const sent = await putUnread(url.pathname, 17 * MiB);
      expect(sent.head).toMatch(/^HTTP\/1\.1 413 /);
      expect(sent.body).toContain("16777216 bytes");
      expect(sent.written).toBeLessThan(17 * MiB);
    });
  });

  describe("run ids scoped per entity", () => {
    it("lets two entities use the same run id, and neither learns of the other's", async () => {
      const id = `shared-${Date.now().toString(36)}`;
      const first = await graphql(a.key, upsert, { name: id, project: "p", entity: a.entity, config: JSON.stringify({ who: { value: "a" } }) });
      expect(first.body.data?.upsertBucket).toMatchObject({ inserted: true, bucket: { name: id } });
      const second = await graphql(b.key, upsert, { name: id, project: "p", entity: b.entity, config: JSON.stringify({ who: { value: "b" } }) });
      expect(second.body.errors).toBeUndefined();
      expect(second.body.data?.upsertBucket).toMatchObject({ inserted: true, bucket: { name: id, historyLineCount: 0 } });
      // Each entity's history goes to its own run.
      const stream = (who: { key: string; entity: string }, loss: number) =>
        fetch(`${baseUrl()}/files/${who.entity}/p/${id}/file_stream`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: basic(who.key) },
          body: JSON.stringify({ files: { "wandb-history.jsonl": { offset: 0, content: [JSON.stringify({ _step: 0, loss })] }, "wandb-summary.json": { offset: 0, content: [JSON.stringify({ loss })] } } }),
        });
      expect((await stream(a, 0.5)).status).toBe(200);
      expect((await stream(b, 0.25)).status).toBe(200);
      const seenByA = await graphql(a.key, resume, { project: "p", entity: a.entity, name: id });
      const seenByB = await graphql(b.key, resume, { project: "p", entity: b.entity, name: id });
      expect(JSON.parse((seenByA.body.data?.model as { bucket: { summaryMetrics: string } }).bucket.summaryMetrics)).toEqual({ loss: 0.5 });
      expect(JSON.parse((seenByB.body.data?.model as { bucket: { summaryMetrics: string } }).bucket.summaryMetrics)).toEqual({ loss: 0.25 });
      // Resuming finds one's own run again (not inserted).
      const again = await graphql(b.key, upsert, { name: id, project: "p", entity: b.entity });
      expect(again.body.data?.upsertBucket).toMatchObject({ inserted: false, bucket: { historyLineCount: 1 } });
      // Within one entity an id stays one run: another project is a conflict, as before.
      const otherProject = await graphql(b.key, upsert, { name: id, project: "q", entity: b.entity });
      expect(otherProject.body.errors?.[0]?.message).toContain("already used by another project");
    });

    it("does not let an entity that takes an id first block another entity's wandb.init", async () => {
      const id = `taken-${Date.now().toString(36)}`;
      expect((await graphql(b.key, upsert, { name: id, project: "q", entity: b.entity })).body.data?.upsertBucket).toMatchObject({ inserted: true });
      const late = await graphql(a.key, upsert, { name: id, project: "p", entity: a.entity });
      expect(late.body.errors).toBeUndefined();
      expect(late.body.data?.upsertBucket).toMatchObject({ inserted: true, bucket: { name: id } });
      // And A's other project says "another project" about A's own run only.
      expect((await graphql(a.key, upsert, { name: id, project: "q", entity: a.entity })).body.errors?.[0]?.message).toContain("already used by another project");
      expect((await graphql(a.key, resume, { project: "q", entity: a.entity, name: id })).body.data?.model).toMatchObject({ bucket: null });
    });
  });

  describe("oversized fields", () => {
    const big = (bytes: number) => JSON.stringify({ blob: { value: "x".repeat(bytes) } });

    it("answers 413 naming the limit for an oversized config, summary or artifact metadata, and stores nothing", async () => {
      const id = `big-${Date.now().toString(36)}`;
      const config = await graphql(a.key, upsert, { name: id, project: "p", entity: a.entity, config: big(5 * MiB) });
      expect(config.status).toBe(413);
      expect(config.body.errors?.[0]?.message).toMatch(/run config is 5\.0 MiB; this server stores at most 4\.0 MiB/);
      expect((await graphql(a.key, resume, { project: "p", entity: a.entity, name: id })).body.data?.model).toMatchObject({ bucket: null });
      const summary = await graphql(a.key, upsert, { name: id, project: "p", entity: a.entity, summary: big(3 * MiB) });
      expect(summary.status).toBe(413);
      const metadata = await graphql(
        a.key,
        `mutation ($entity: String!, $metadata: JSONString) { createArtifact(input: {entityName: $entity, projectName: "p", artifactTypeName: "dataset", artifactCollectionNames: ["meta"], digest: "d-meta", digestAlgorithm: MANIFEST_MD5, metadata: $metadata}) { artifact { id } } }`,
        { entity: a.entity, metadata: big(5 * MiB) },
      );
      expect(metadata.status).toBe(413);
      expect(metadata.body.errors?.[0]?.message).toContain("artifact metadata");
      // Within the limits all is stored.
      expect((await graphql(a.key, upsert, { name: id, project: "p", entity: a.entity, config: big(3 * MiB) })).status).toBe(200);
    });

    it("answers 413 for a history row, summary or too many metrics on the file stream", async () => {
      const id = `bigstream-${Date.now().toString(36)}`;
      expect((await graphql(a.key, upsert, { name: id, project: "p", entity: a.entity })).status).toBe(200);
      const stream = (files: Record<string, unknown>) =>
        fetch(`${baseUrl()}/files/${a.entity}/p/${id}/file_stream`, { method: "POST", headers: { "content-type": "application/json", authorization: basic(a.key) }, body: JSON.stringify({ files }) });
      const row = await stream({ "wandb-history.jsonl": { offset: 0, content: [JSON.stringify({ _step: 0, text: "x".repeat(5 * MiB) })] } });
      expect(row.status).toBe(413);
      expect(((await row.json()) as { error: string }).error).toContain("history row");
      expect((await stream({ "wandb-summary.json": { offset: 0, content: [JSON.stringify({ text: "x".repeat(3 * MiB) })] } })).status).toBe(413);
      const wide = Object.fromEntries(Array.from({ length: 20_001 }, (_, i) => [`m${i}`, i]));
      const tooMany = await stream({ "wandb-history.jsonl": { offset: 0, content: [JSON.stringify({ _step: 0, ...wide })] } });
      expect(tooMany.status).toBe(413);
      expect(((await tooMany.json()) as { error: string }).error).toContain("distinct metrics");
      // Nothing of the refused requests was counted.
      const resumed = await graphql(a.key, resume, { project: "p", entity: a.entity, name: id });
      expect(resumed.body.data?.model).toMatchObject({ bucket: { historyLineCount: 0 } });
    });
  });
});
