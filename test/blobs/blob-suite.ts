// The blob store end to end, through a real server with its own database: uploads up to the body
// limit over REST (raw and multipart) and over the W&B API's signed URLs, a 40 MB RL batch, uploads
// killed or timed out (nothing left once the collector runs), crashes and errors injected between
// the steps of an artifact commit and then retried (exactly one version, its files readable),
// concurrent uploads of one name and concurrent commits (no 500, no duplicate), a download URL of a
// step deleted and trained again (404), a deleted model's blobs collected, and GridFS blobs of
// before the blob store moved at start-up. Run once per store (local files, S3-compatible server).
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { connect } from "node:net";
import { GridFSBucket } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Checkpoints } from "../../services/models/index.js";
import type { BlobStore } from "../../services/store/index.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

export interface StoreUnderTest {
  /** Extra environment of the service (BLOB_STORE_URL and credentials for S3; none for local files). */
  env: Record<string, string>;
  /** The same store, opened in the test process, to look at what is stored. */
  open(dataDir: string): BlobStore;
  /** Objects an interrupted upload left (temporary files or objects, unfinished multipart uploads). */
  leftovers(store: BlobStore, dataDir: string): Promise<number>;
  stop(): Promise<void>;
}

const ENTITY = "blobber";
const MiB = 2 ** 20;
/** The collector runs every half second and takes what has been unnamed for 1.5 s. */
const COLLECTOR_ENV = { BLOB_GRACE_MS: "1500", BLOB_COLLECT_EVERY_MS: "500", HEADERS_TIMEOUT_MS: "3000", REQUEST_TIMEOUT_MS: "4000", ENTITY_REQUESTS_PER_SECOND: "0" };

const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");
const md5 = (data: Uint8Array | string) => createHash("md5").update(data).digest("base64");

export function describeBlobStore(name: string, setUp: () => Promise<StoreUnderTest>): void {
  describe(`blob store: ${name}`, () => {
    let target: StoreUnderTest;
    let isolated: IsolatedServer;
    let store: BlobStore;
    let env: Record<string, string>;
    let entity = "";

    beforeAll(async () => {
      target = await setUp();
      env = { ...COLLECTOR_ENV, ...target.env };
      isolated = await startIsolatedServer({ name: `blobs_${name.replace(/\W/g, "")}`, entity: ENTITY, env });
      store = target.open(isolated.dataDir);
      entity = ((await rest("GET", "/v1/preview/whoami")).body as { entity: string }).entity;
    }, 180_000);

    afterAll(async () => {
      await store?.close();
      await isolated?.stop();
      await target?.stop();
    });

    const url = (path: string) => `${isolated.server.url}${path}`;
    const auth = () => ({ authorization: `Bearer ${isolated.key}` });

    async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
      const res = await fetch(url(path), { method, headers: { ...auth(), "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
    }

    async function upload(project: string, artifact: string, content: Uint8Array, extra = ""): Promise<{ status: number; body: { version?: number; files?: { name: string }[]; message?: string } }> {
      const res = await fetch(url(`/v1/preview/artifacts?project=${project}&name=${artifact}&filename=data.bin${extra}`), { method: "POST", headers: { ...auth(), "content-type": "application/octet-stream" }, body: content });
      return { status: res.status, body: (await res.json()) as { version?: number } };
    }

    async function download(ref: string, filename = "data.bin"): Promise<{ status: number; bytes: Buffer }> {
      const res = await fetch(url(`/v1/preview/artifacts/download?url=${encodeURIComponent(ref)}&filename=${filename}`), { headers: auth() });
      return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
    }

    async function graphql(query: string, variables: Record<string, unknown> = {}): Promise<{ status: number; data: Record<string, unknown> | null | undefined; errors?: { message: string }[] }> {
      const res = await fetch(url("/graphql"), {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Basic ${Buffer.from(`api:${isolated.key}`).toString("base64")}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string }[] };
      return { status: res.status, data: body.data, errors: body.errors };
    }

    /** `run.log_artifact` as wandb-core does it, up to (not including) the commit: the pending artifact's GraphQL id. */
    async function logArtifact(project: string, collection: string, files: Record<string, Uint8Array>): Promise<string> {
      const created = await graphql(
        `mutation ($entity: String!, $project: String!, $name: String!, $digest: String!) { createArtifact(input: {entityName: $entity, projectName: $project, artifactTypeName: "dataset", artifactCollectionNames: [$name], digest: $digest, digestAlgorithm: MANIFEST_MD5}) { artifact { id state } } }`,
        { entity, project, name: collection, digest: randomUUID() },
      );
      const id = (created.data?.createArtifact as { artifact: { id: string } } | undefined)?.artifact.id;
      expect(id, JSON.stringify(created.errors)).toBeTruthy();
      const manifestFile = await graphql(`mutation ($id: ID!) { createArtifactManifest(input: {artifactID: $id, name: "wandb_manifest.json", digest: "", entityName: "e", projectName: "p", runName: "r"}) { artifactManifest { file { uploadUrl } } } }`, { id });
      const manifestUrl = (manifestFile.data?.createArtifactManifest as { artifactManifest: { file: { uploadUrl: string } } }).artifactManifest.file.uploadUrl;
      const specs = Object.entries(files).map(([fileName, content]) => ({ artifactID: id, name: fileName, md5: md5(content) }));
      const uploads = await graphql(`mutation ($files: [CreateArtifactFileSpecInput!]!) { createArtifactFiles(input: {storageLayout: V2, artifactFiles: $files}) { files { edges { node { name uploadUrl } } } } }`, { files: specs });
      for (const { node } of (uploads.data?.createArtifactFiles as { files: { edges: { node: { name: string; uploadUrl: string } }[] } }).files.edges) {
        const put = await fetch(node.uploadUrl, { method: "PUT", body: files[node.name] });
        expect(put.status, `PUT ${node.name}`).toBe(200);
      }
      const manifest = { version: 1, storagePolicy: "wandb-storage-policy-v1", storagePolicyConfig: { storageLayout: "V2" }, contents: Object.fromEntries(Object.entries(files).map(([fileName, content]) => [fileName, { digest: md5(content), size: content.byteLength }])) };
      expect((await fetch(manifestUrl, { method: "PUT", body: JSON.stringify(manifest) })).status).toBe(200);
      return id as string;
    }

    const commit = (id: string) => graphql(`mutation ($id: ID!) { commitArtifact(input: {artifactID: $id}) { artifact { id state versionIndex } } }`, { id });

    /** The committed versions of a name, with their files' download URLs. */
    async function versions(project: string, collection: string): Promise<{ versionIndex: number; files: { name: string; directUrl: string }[] }[]> {
      const found = await graphql(
        `query ($entity: String, $project: String!, $name: String!) { project(name: $project, entityName: $entity) { artifactCollection(name: $name) { artifacts(first: 50) { edges { node { versionIndex files(first: 20) { edges { node { name directUrl } } } } } } } } }`,
        { entity, project, name: collection },
      );
      expect(found.errors, JSON.stringify(found.errors)).toBeUndefined();
      const edges = ((found.data?.project as { artifactCollection: { artifacts: { edges: { node: { versionIndex: number; files: { edges: { node: { name: string; directUrl: string } }[] } } }[] } } | null } | null)?.artifactCollection?.artifacts.edges ?? []);
      return edges.map(({ node }) => ({ versionIndex: node.versionIndex, files: node.files.edges.map((edge) => edge.node) }));
    }

    async function storedNames(): Promise<Set<string>> {
      const names = new Set<string>();
      for await (const blob of store.list()) names.add(blob.sha256);
      return names;
    }

    /** Waits until the collector has removed these blobs (it runs every half second). */
    async function collected(names: Iterable<string>, within = 20_000): Promise<string[]> {
      const deadline = Date.now() + within;
      for (;;) {
        const stored = await storedNames();
        const left = [...names].filter((name) => stored.has(name));
        if (left.length === 0 || Date.now() > deadline) return left;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }

    it("uploads 1, 16 and 60 MiB through REST, raw and as a form, and downloads each back whole", async () => {
      for (const size of [1 * MiB, 16 * MiB, 60 * MiB]) {
        const content = randomBytes(size);
        const sent = await upload("sizes", `raw-${size}`, content);
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
        const back = await download(`wandb-artifact:///${entity}/sizes/raw-${size}:v0`);
        expect(back.status).toBe(200);
        expect(back.bytes.length).toBe(size);
        expect(sha256(back.bytes)).toBe(sha256(content));
      }
      const form = new FormData();
      const first = randomBytes(16 * MiB);
      const second = Buffer.from('{"messages": []}\n');
      form.append("files", new Blob([first]), "weights.bin");
      form.append("files", new Blob([second]), "train.jsonl");
      const res = await fetch(url("/v1/preview/artifacts?project=sizes&name=form"), { method: "POST", headers: auth(), body: form });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(((await res.json()) as { files: { name: string; size: string }[] }).files.map((f) => [f.name, Number(f.size)])).toEqual([
        ["weights.bin", 16 * MiB],
        ["train.jsonl", second.length],
      ]);
      expect(sha256((await download(`wandb-artifact:///${entity}/sizes/form:v0`, "weights.bin")).bytes)).toBe(sha256(first));
      // Over the body limit (64 MiB): 413, and nothing of it stays.
      expect((await upload("sizes", "too-big", Buffer.alloc(65 * MiB, 1))).status).toBe(413);
      expect(await target.leftovers(store, isolated.dataDir)).toBe(0);
    }, 240_000);

    it("uploads 1, 16 and 60 MiB through the W&B API's signed URLs, committed and downloaded back", async () => {
      const files = { "small.bin": randomBytes(1 * MiB), "medium.bin": randomBytes(16 * MiB), "large.bin": randomBytes(60 * MiB) };
      const id = await logArtifact("wandb-sizes", "bundle", files);
      const committed = await commit(id);
      expect(committed.data?.commitArtifact, JSON.stringify(committed.errors)).toMatchObject({ artifact: { state: "COMMITTED", versionIndex: 0 } });
      const [version] = await versions("wandb-sizes", "bundle");
      expect(version?.files.map((f) => f.name).sort()).toEqual(["large.bin", "medium.bin", "small.bin"]);
      for (const file of version?.files ?? []) {
        const bytes = Buffer.from(await (await fetch(file.directUrl)).arrayBuffer());
        expect(sha256(bytes), file.name).toBe(sha256(files[file.name as keyof typeof files]));
      }
    }, 240_000);

    it("takes an RL batch of 40 MB", async () => {
      const model = await rest("POST", "/v1/preview/models", { project: "rl", name: "big-batch", base_model: "tiny-chat" });
      expect(model.status).toBe(200);
      const modelId = (model.body as { id: string }).id;
      const text = "a".repeat(1_000_000);
      const groups = Array.from({ length: 40 }, (_, i) => ({ trajectories: [{ messages_and_choices: [{ role: "user", content: `${i}${text}` }, { role: "assistant", content: "ok" }], reward: i % 2 }] }));
      const body = JSON.stringify({ model_id: modelId, trajectory_groups: groups });
      expect(body.length).toBeGreaterThan(40_000_000);
      const res = await fetch(url("/v1/preview/training-jobs"), { method: "POST", headers: { ...auth(), "content-type": "application/json" }, body });
      expect(res.status, await res.clone().text()).toBe(200);
      const job = (await res.json()) as { id: string };
      const record = await isolated.db.db.collection<{ _id: string; input_sha256: string }>("training_jobs").findOne({ _id: job.id });
      const stored = await store.stat(record?.input_sha256 ?? "");
      expect(stored?.size).toBeGreaterThan(40_000_000);
    }, 120_000);

    it("keeps no bytes of an upload killed mid-body or timed out, once the collector has run", async () => {
      const before = await storedNames();
      const head = (length: number) =>
        `POST /v1/preview/artifacts?project=cut&name=cut&filename=x.bin HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${isolated.key}\r\ncontent-type: application/octet-stream\r\ncontent-length: ${length}\r\n\r\n`;
      const port = isolated.server.port;
      // Killed: 8 MiB of a 32 MiB body, then the connection is cut.
      await new Promise<void>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () => {
          socket.write(head(32 * MiB));
          socket.write(randomBytes(8 * MiB), () => setTimeout(() => socket.destroy(), 300));
        });
        socket.once("close", () => resolve());
        socket.once("error", reject);
      });
      // Timed out: 1 MiB, then nothing; the server ends it after REQUEST_TIMEOUT_MS (4 s).
      const timedOut = await new Promise<number>((resolve, reject) => {
        const started = Date.now();
        const socket = connect(port, "127.0.0.1", () => {
          socket.write(head(32 * MiB));
          socket.write(randomBytes(MiB));
        });
        socket.resume();
        socket.once("close", () => resolve(Date.now() - started));
        socket.once("error", () => undefined);
        setTimeout(() => reject(new Error("the server kept a stalled upload open")), 30_000);
      });
      expect(timedOut).toBeLessThan(20_000);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(await target.leftovers(store, isolated.dataDir)).toBe(0);
      expect([...(await storedNames())].filter((name) => !before.has(name))).toEqual([]);
      // The service is fine: the same name uploads whole.
      expect((await upload("cut", "cut", Buffer.from("whole"))).status).toBe(200);
    }, 60_000);

    it("commits exactly one version when a commit crashes or fails between any two of its steps and is retried", async () => {
      const points = ["wandb.commit.leased", "wandb.commit.stored", "wandb.commit.marked"];
      for (const point of points) {
        await isolated.restart({ ...env, FAILPOINTS: `${point}=crash` });
        const content = randomBytes(256 * 1024);
        const id = await logArtifact("crashes", `crash-${point.split(".").pop()}`, { "data.bin": content });
        await expect(commit(id), point).rejects.toThrow(); // the process died mid-request
        await isolated.restart(env);
        const retried = await commit(id);
        expect(retried.data?.commitArtifact, `${point}: ${JSON.stringify(retried.errors)}`).toMatchObject({ artifact: { state: "COMMITTED", versionIndex: 0 } });
        const listed = await versions("crashes", `crash-${point.split(".").pop()}`);
        expect(listed.map((v) => v.versionIndex), point).toEqual([0]);
        const bytes = Buffer.from(await (await fetch(listed[0]?.files[0]?.directUrl as string)).arrayBuffer());
        expect(sha256(bytes), point).toBe(sha256(content));
      }
      // Failures (as a database timeout): each point fails once; the client retries until it commits.
      await isolated.restart({ ...env, FAILPOINTS: points.map((point) => `${point}=error`).join(",") });
      const content = randomBytes(1024);
      const id = await logArtifact("crashes", "errors", { "data.bin": content });
      const statuses: string[] = [];
      for (let attempt = 0; attempt < 6; attempt++) {
        const answer = await commit(id);
        statuses.push(answer.errors ? "error" : "committed");
        if (!answer.errors) break;
      }
      expect(statuses).toEqual(["error", "error", "error", "committed"]);
      const listed = await versions("crashes", "errors");
      expect(listed.map((v) => v.versionIndex)).toEqual([0]);
      expect(sha256(Buffer.from(await (await fetch(listed[0]?.files[0]?.directUrl as string)).arrayBuffer()))).toBe(sha256(content));
      await isolated.restart(env);
    }, 300_000);

    it("gives 24 concurrent uploads of one name 24 versions, 6 concurrent commits one, and concurrent adds of a file name one", async () => {
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => upload("race", "same", Buffer.from(`upload ${i}\n`))));
      expect(answers.map((a) => a.status)).toEqual(Array(24).fill(200));
      expect(answers.map((a) => a.body.version).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 24 }, (_, i) => i));

      const id = await logArtifact("race", "committed-once", { "data.bin": Buffer.from("once") });
      const commits = await Promise.all(Array.from({ length: 6 }, () => commit(id)));
      for (const answer of commits) expect(answer.data?.commitArtifact, JSON.stringify(answer.errors)).toMatchObject({ artifact: { state: "COMMITTED", versionIndex: 0 } });
      expect(new Set(commits.map((answer) => (answer.data?.commitArtifact as { artifact: { id: string } }).artifact.id)).size).toBe(1);
      expect((await versions("race", "committed-once")).length).toBe(1);

      const adds = await Promise.all(Array.from({ length: 8 }, (_, i) => fetch(url(`/v1/preview/artifacts?project=race&name=same&version=0&filename=extra.txt`), { method: "POST", headers: auth(), body: `add ${i}` })));
      const statuses = adds.map((res) => res.status).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      const v0 = await isolated.db.db.collection<{ files: { name: string }[] }>("artifacts").findOne({ project: "race", name: "same", version: 0 });
      expect(v0?.files.map((f) => f.name).sort()).toEqual(["data.bin", "extra.txt"]);
    }, 120_000);

    it("answers 404 to the download URL of a step deleted and trained again", async () => {
      const model = await rest("POST", "/v1/preview/models", { project: "steps", name: "again", base_model: "tiny-chat" });
      const modelId = (model.body as { id: string }).id;
      const checkpoints = new Checkpoints(isolated.db.db, store);
      const adapter = { gguf: Buffer.from("gguf v1"), peft: { "adapter_config.json": Buffer.from("{}"), "adapter_model.safetensors": Buffer.from("weights v1") } };
      await checkpoints.create(modelId, 1, {}, adapter);
      const view = await graphql(`query ($entity: String, $name: String!) { project(name: "steps", entityName: $entity) { artifact(name: $name) { files { edges { node { name directUrl } } } } } }`, { entity, name: "again:step1" });
      const files = (view.data?.project as { artifact: { files: { edges: { node: { name: string; directUrl: string } }[] } } }).artifact.files.edges.map((e) => e.node);
      const weightsUrl = files.find((f) => f.name === "adapter_model.safetensors")?.directUrl as string;
      expect(Buffer.from(await (await fetch(weightsUrl)).arrayBuffer()).toString()).toBe("weights v1");
      expect((await rest("DELETE", `/v1/preview/models/${modelId}/checkpoints`, { steps: [1] })).status).toBe(200);
      // Trained again, once with other weights and once with the very same bytes: the old URL serves neither.
      await checkpoints.create(modelId, 1, {}, { ...adapter, peft: { ...adapter.peft, "adapter_model.safetensors": Buffer.from("weights v2") } });
      expect((await fetch(weightsUrl)).status).toBe(404);
      expect((await rest("DELETE", `/v1/preview/models/${modelId}/checkpoints`, { steps: [1] })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 5)); // a new creation time
      await checkpoints.create(modelId, 1, {}, adapter);
      expect((await fetch(weightsUrl)).status).toBe(404);
    }, 60_000);

    it("removes a deleted model's blobs once the collector runs, and keeps blobs another record still names", async () => {
      const model = await rest("POST", "/v1/preview/models", { project: "gone", name: "doomed", base_model: "tiny-chat" });
      const modelId = (model.body as { id: string }).id;
      const checkpoints = new Checkpoints(isolated.db.db, store);
      const own = randomBytes(100_000);
      const shared = Buffer.from("shared with an artifact");
      await checkpoints.create(modelId, 1, {}, { gguf: own, peft: null });
      await checkpoints.create(modelId, 2, {}, { gguf: shared, peft: null });
      expect((await upload("gone", "keeper", shared)).status).toBe(200);
      const job = await rest("POST", "/v1/preview/training-jobs", { model_id: modelId, trajectory_groups: [{ trajectories: [{ messages_and_choices: [{ role: "user", content: randomUUID() }], reward: 1 }] }] });
      const input = (await isolated.db.db.collection<{ _id: string; input_sha256: string }>("training_jobs").findOne({ _id: (job.body as { id: string }).id }))?.input_sha256 as string;
      expect(await store.stat(input)).not.toBeNull();
      expect((await rest("DELETE", `/v1/preview/models/${modelId}`)).status).toBe(200);
      expect(await collected([sha256(own), input])).toEqual([]);
      expect(await store.stat(sha256(shared))).not.toBeNull();
      expect((await download(`wandb-artifact:///${entity}/gone/keeper:v0`)).bytes.toString()).toBe(shared.toString());
    }, 60_000);

    it("moves GridFS blobs of before the blob store at start-up and drops GridFS with its orphaned chunks", async () => {
      const db = isolated.db.db;
      const legacy = new GridFSBucket(db, { bucketName: "blobs" });
      const content = Buffer.from('{"messages": [{"role": "user", "content": "from GridFS"}]}\n');
      const stream = legacy.openUploadStream("old/train.jsonl");
      await new Promise<void>((resolve, reject) => stream.once("finish", () => resolve()).once("error", reject).end(content));
      // An upload that died half-way: chunks no file document names.
      const orphan = legacy.openUploadStream("dead");
      orphan.write(randomBytes(300 * 1024));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await db.collection("artifacts").insertOne({
        _id: randomUUID() as never,
        entity,
        project: "legacy",
        name: "old",
        version: 0,
        type: "dataset",
        files: [{ name: "train.jsonl", size: content.length, blob_id: stream.id, md5: md5(content) }],
        model_id: null,
        created_at: new Date(),
      });
      await isolated.restart(env);
      const back = await download(`wandb-artifact:///${entity}/legacy/old:v0`, "train.jsonl");
      expect(back.status).toBe(200);
      expect(back.bytes.toString()).toBe(content.toString());
      const collections = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
      expect(collections.filter((c) => c.startsWith("blobs.") || c.startsWith("adapters."))).toEqual([]);
      const record = await db.collection<{ files: { sha256?: string; blob_id?: unknown }[] }>("artifacts").findOne({ project: "legacy", name: "old" });
      expect(record?.files[0]).toMatchObject({ sha256: sha256(content) });
      expect(record?.files[0]?.blob_id).toBeUndefined();
    }, 120_000);
  });
}
