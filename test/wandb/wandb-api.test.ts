// The W&B API at the protocol level, as the wandb SDK speaks it (the SDK itself drives it in
// test/wandb/python): HTTP basic `api:<key>`, GraphQL validated against the served schema, the
// run file stream into the run history, artifact logging through signed upload URLs, downloads
// through signed URLs; and nothing of one entity reachable with another's key.
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { baseUrl, rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

const basic = (key: string) => `Basic ${Buffer.from(`api:${key}`).toString("base64")}`;

async function graphql(key: string | null, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${baseUrl()}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: basic(key) } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string }[] } };
}

const md5 = (data: string) => createHash("md5").update(data).digest("base64");

describe("W&B API", () => {
  let alice: string;
  let bob: string;
  let aliceEntity: string;

  beforeAll(async () => {
    aliceEntity = uniqueEntity("wb-alice");
    alice = await createKey(aliceEntity);
    bob = await createKey(uniqueEntity("wb-bob"));
  });

  it("answers viewer for the key's entity, 401 without a key, and names what is not served", async () => {
    const viewer = await graphql(alice, "query Viewer { viewer { entity username } }");
    expect(viewer).toMatchObject({ status: 200, body: { data: { viewer: { entity: aliceEntity, username: aliceEntity } } } });
    const anonymous = await graphql(null, "query { viewer { entity } }");
    expect(anonymous.status).toBe(401);
    const unknown = await graphql(alice, "query { viewer { entity secretField } }");
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors?.[0]?.message).toContain('Cannot query field "secretField" on type "User"');
    const garbage = await fetch(`${baseUrl()}/graphql`, { method: "POST", headers: { authorization: basic(alice) }, body: "{" });
    expect(garbage.status).toBe(400);
    // Objects link back to each other: a query may not nest without bound (fragments count).
    const deep = `query { project(name: "p") { artifact(name: "x") { ${"artifactSequence { latestArtifact { ".repeat(8)}id${" } }".repeat(8)} } } }`;
    expect((await graphql(alice, deep)).body.errors?.[0]?.message).toContain("deeper than 16 levels");
    const viaFragments = `query { project(name: "p") { artifact(name: "x") { ...A } } } fragment A on Artifact { artifactSequence { latestArtifact { ...B } } } fragment B on Artifact { artifactSequence { latestArtifact { ...C } } } fragment C on Artifact { artifactSequence { latestArtifact { ...D } } } fragment D on Artifact { artifactSequence { latestArtifact { ...E } } } fragment E on Artifact { artifactSequence { latestArtifact { ...F } } } fragment F on Artifact { artifactSequence { latestArtifact { ...G } } } fragment G on Artifact { artifactSequence { latestArtifact { id } } }`;
    expect((await graphql(alice, viaFragments)).status).toBe(400);
  });

  it("creates a run, streams history into the run's metrics, resumes it, and keeps it from other entities", async () => {
    const upsert = `mutation UpsertBucket($name: String, $project: String, $entity: String, $config: JSONString) {
      upsertBucket(input: {name: $name, modelName: $project, entityName: $entity, config: $config}) { bucket { id name project { name entity { name } } } inserted } }`;
    const config = JSON.stringify({ lr: { value: 0.1 }, _wandb: { value: { t: { 1: [1] } } } });
    const created = await graphql(alice, upsert, { name: "wbrun-1", project: "p", entity: aliceEntity, config });
    expect(created.body.data?.upsertBucket).toMatchObject({ inserted: true, bucket: { name: "wbrun-1", project: { name: "p", entity: { name: aliceEntity } } } });

    const lines = [JSON.stringify({ _step: 0, loss: 0.5, "train/reward": 0.25, nested: { a: 1 }, text: "x" }), JSON.stringify({ _step: 1, loss: 0.25, training_step: 7 })];
    const stream = (key: string, offset: number) =>
      fetch(`${baseUrl()}/files/${aliceEntity}/p/wbrun-1/file_stream`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: basic(key) },
        body: JSON.stringify({ files: { "wandb-history.jsonl": { offset, content: lines }, "wandb-summary.json": { offset: 0, content: [JSON.stringify({ loss: 0.25 })] } } }),
      });
    expect((await stream(alice, 0)).status).toBe(200);
    // A retried request repeats lines already counted: they are not recorded twice.
    expect((await stream(alice, 0)).status).toBe(200);
    expect((await stream(bob, 2)).status).toBe(404);

    const metrics = await rest("GET", "/v1/preview/runs/wbrun-1/metrics", { key: alice });
    const points = (metrics.body as { data: { step: number; split: string; name: string; value: number }[] }).data.map(({ step, split, name, value }) => ({ step, split, name, value }));
    expect(points).toEqual([
      { step: 0, split: "history", name: "loss", value: 0.5 },
      { step: 0, split: "history", name: "nested.a", value: 1 },
      { step: 0, split: "train", name: "train/reward", value: 0.25 },
      { step: 7, split: "history", name: "loss", value: 0.25 },
      { step: 7, split: "history", name: "training_step", value: 7 },
    ]);
    expect((await rest("GET", "/v1/preview/runs/wbrun-1/metrics", { key: bob })).status).toBe(404);

    const resume = `query RunResumeStatus($project: String, $entity: String, $name: String!) {
      model(name: $project, entityName: $entity) { bucket(name: $name, missingOk: true) { historyLineCount historyTail summaryMetrics config wandbConfig(keys: ["t"]) } } }`;
    const resumed = await graphql(alice, resume, { project: "p", entity: aliceEntity, name: "wbrun-1" });
    const bucket = (resumed.body.data?.model as { bucket: Record<string, unknown> }).bucket;
    expect(bucket.historyLineCount).toBe(2);
    expect((JSON.parse(bucket.historyTail as string) as string[]).at(-1)).toBe(lines[1]);
    expect(JSON.parse(bucket.wandbConfig as string)).toEqual({ t: { 1: [1] } });
    expect(JSON.parse(bucket.summaryMetrics as string)).toEqual({ loss: 0.25 });
    // Bob sees no such project of Alice's entity, and cannot write into it.
    expect((await graphql(bob, resume, { project: "p", entity: aliceEntity, name: "wbrun-1" })).body.data?.model).toBeNull();
    const intrusion = await graphql(bob, upsert, { name: "wbrun-1", project: "p", entity: aliceEntity, config });
    expect(intrusion.body.errors?.[0]?.message).toContain("not found");
  });

  it("logs an artifact through signed upload URLs, serves it by name and alias, and refuses tampering", async () => {
    const content = '{"messages": [{"role": "user", "content": "hi"}]}\n';
    const manifest = JSON.stringify({ version: 1, storagePolicy: "wandb-storage-policy-v1", storagePolicyConfig: { storageLayout: "V2" }, contents: { "train.jsonl": { digest: md5(content), size: content.length } } });
    const create = await graphql(
      alice,
      `mutation ($entity: String!, $digest: String!) { createArtifact(input: {entityName: $entity, projectName: "p", artifactTypeName: "dataset", artifactCollectionNames: ["data"], digest: $digest, digestAlgorithm: MANIFEST_MD5, aliases: [{artifactCollectionName: "data", alias: "first"}], metadata: "{\\"rows\\": 1}"}) { artifact { id state versionIndex } } }`,
      { entity: aliceEntity, digest: "d1" },
    );
    const artifact = (create.body.data?.createArtifact as { artifact: { id: string; state: string } }).artifact;
    expect(artifact.state).toBe("PENDING");
    const manifestFile = await graphql(alice, `mutation ($id: ID!) { createArtifactManifest(input: {artifactID: $id, name: "wandb_manifest.json", digest: "", entityName: "e", projectName: "p", runName: "r"}) { artifactManifest { id file { uploadUrl } } } }`, { id: artifact.id });
    const manifestUrl = (manifestFile.body.data?.createArtifactManifest as { artifactManifest: { file: { uploadUrl: string } } }).artifactManifest.file.uploadUrl;
    const files = await graphql(alice, `mutation ($id: ID!, $md5: String!) { createArtifactFiles(input: {storageLayout: V2, artifactFiles: [{artifactID: $id, name: "train.jsonl", md5: $md5}]}) { files { edges { node { name uploadUrl } } } } }`, { id: artifact.id, md5: md5(content) });
    const uploadUrl = (files.body.data?.createArtifactFiles as { files: { edges: { node: { uploadUrl: string } }[] } }).files.edges[0]?.node.uploadUrl as string;
    expect(uploadUrl.startsWith(baseUrl())).toBe(true);

    expect((await fetch(uploadUrl, { method: "PUT", body: "other bytes" })).status).toBe(400); // not the announced MD5
    expect((await fetch(uploadUrl.replace(/.$/, (c) => (c === "A" ? "B" : "A")), { method: "PUT", body: content })).status).toBe(404); // tampered signature
    expect((await fetch(uploadUrl, { method: "PUT", body: content })).status).toBe(200);
    expect((await fetch(manifestUrl, { method: "PUT", body: manifest })).status).toBe(200);
    // Bob cannot commit, read or find it.
    expect((await graphql(bob, `mutation ($id: ID!) { commitArtifact(input: {artifactID: $id}) { artifact { id } } }`, { id: artifact.id })).body.errors?.[0]?.message).toContain("not being logged");
    const commit = await graphql(alice, `mutation ($id: ID!) { commitArtifact(input: {artifactID: $id}) { artifact { id state versionIndex aliases { alias } } } }`, { id: artifact.id });
    expect(commit.body.data?.commitArtifact).toMatchObject({ artifact: { state: "COMMITTED", versionIndex: 0 } });
    const aliases = (commit.body.data?.commitArtifact as { artifact: { aliases: { alias: string }[] } }).artifact.aliases.map((a) => a.alias).sort();
    expect(aliases).toEqual(["first", "latest"]);

    const byName = `query ($entity: String, $name: String!) { project(name: "p", entityName: $entity) { artifact(name: $name) { id metadata files { edges { node { name directUrl md5 } } } currentManifest { file { directUrl } } } } }`;
    const found = await graphql(alice, byName, { entity: aliceEntity, name: "data:first" });
    const view = (found.body.data?.project as { artifact: { metadata: string; files: { edges: { node: { name: string; directUrl: string; md5: string } }[] }; currentManifest: { file: { directUrl: string } } } }).artifact;
    expect(JSON.parse(view.metadata)).toEqual({ rows: 1 });
    const file = view.files.edges[0]?.node;
    expect(file).toMatchObject({ name: "train.jsonl", md5: md5(content) });
    expect(await (await fetch(file?.directUrl as string)).text()).toBe(content);
    const served = JSON.parse(await (await fetch(view.currentManifest.file.directUrl)).text()) as { contents: Record<string, { digest: string }> };
    expect(served.contents["train.jsonl"]?.digest).toBe(md5(content));
    // The artifact is the service's artifact too: SFT jobs can name it.
    const download = await rest("GET", `/v1/preview/artifacts/download?url=${encodeURIComponent(`wandb-artifact:///${aliceEntity}/p/data:v0`)}`, { key: alice });
    expect(download.text).toBe(content);

    expect((await graphql(bob, byName, { entity: aliceEntity, name: "data:first" })).body.data?.project).toBeNull();
    expect((await graphql(bob, `query ($id: ID!) { artifact(id: $id) { id } }`, { id: artifact.id })).body.data?.artifact).toBeNull();
  });
});
