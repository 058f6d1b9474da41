// What newer wandb SDKs (0.28 to 0.31) send beyond 0.25, against the real server: wandb-core's
// empty operationName, the whole CreateArtifactFilesInput with its null extras, numeric project
// ids, a run's user, listing a project's runs (api.runs), use_artifact with used_by and logged_by,
// and the membership and artifact fields the 0.31 documents select.
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { createKey, uniqueEntity } from "../support/keys.js";
import { data, graphql, streamHistory, UPSERT_RUN } from "./wandb-client.js";

const md5 = (text: string) => createHash("md5").update(text).digest("base64");

/** run.log_artifact as wandb-core 0.31 sends it: one file, logged by `run`. */
async function logArtifact(key: string, entity: string, project: string, run: string, name: string, content: string): Promise<string> {
  const created = await data(
    key,
    `mutation ($input: CreateArtifactInput!) { createArtifact(input: $input) { artifact { id state } } }`,
    { input: { entityName: entity, projectName: project, artifactTypeName: "dataset", artifactCollectionName: name, runName: run, digest: md5(content), digestAlgorithm: "MANIFEST_MD5", clientMutationId: null, storageRegion: null } },
  );
  const id = (created.createArtifact as { artifact: { id: string } }).artifact.id;
  const manifest = await data(key, `mutation ($id: ID!) { createArtifactManifest(input: {artifactID: $id, name: "wandb_manifest.json", digest: "", entityName: "e", projectName: "p", runName: "r"}) { artifactManifest { file { uploadUrl } } } }`, { id });
  const files = await data(key, `mutation CreateArtifactFiles ($input: CreateArtifactFilesInput!) { createArtifactFiles(input: $input) { files { edges { node { uploadUrl } } } } }`, {
    input: { artifactFiles: [{ artifactID: id, name: "data.txt", md5: md5(content), mimetype: null, artifactManifestID: null, uploadPartsInput: null }], storageLayout: "V2", clientMutationId: null, cloudRegionID: null },
  });
  const uploadUrl = (files.createArtifactFiles as { files: { edges: { node: { uploadUrl: string } }[] } }).files.edges[0]?.node.uploadUrl as string;
  expect((await fetch(uploadUrl, { method: "PUT", body: content })).status).toBe(200);
  const manifestText = JSON.stringify({ version: 1, storagePolicy: "wandb-storage-policy-v1", storagePolicyConfig: { storageLayout: "V2" }, contents: { "data.txt": { digest: md5(content), size: content.length } } });
  expect((await fetch((manifest.createArtifactManifest as { artifactManifest: { file: { uploadUrl: string } } }).artifactManifest.file.uploadUrl, { method: "PUT", body: manifestText })).status).toBe(200);
  await data(key, `mutation ($id: ID!) { commitArtifact(input: {artifactID: $id}) { artifact { id } } }`, { id });
  return id;
}

describe("W&B API for wandb 0.28 to 0.31", () => {
  let key: string;
  let entity: string;
  const project = "versions";

  beforeAll(async () => {
    entity = uniqueEntity("wb-versions");
    key = await createKey(entity);
  });

  it("takes an empty operationName as none (wandb-core 0.28+), and still picks a named one", async () => {
    const anonymous = await graphql(key, "query { viewer { id } }", {}, "");
    expect(anonymous).toMatchObject({ status: 200, body: { data: { viewer: { id: expect.any(String) } } } });
    const named = await graphql(key, "query A { viewer { entity } } query B { viewer { username } }", {}, "B");
    expect(named.body.data).toEqual({ viewer: { username: entity } });
    expect((await graphql(key, "query A { viewer { entity } } query B { viewer { username } }", {}, "")).status).toBe(400);
  });

  it("answers weave's default-entity query (weave.init of a project named without its entity)", async () => {
    // weave 0.54 weave/compat/wandb/wandb_thin/internal_api.py VIEWER_DEFAULT_ENTITY_QUERY, verbatim.
    const answer = await data(key, "query DefaultEntity { viewer { username defaultEntity { name } } }");
    expect(answer).toEqual({ viewer: { username: entity, defaultEntity: { name: entity } } });
  });

  it("gives runs a numeric projectId matching the project's internalId, and the entity's user", async () => {
    await data(key, UPSERT_RUN, { entity, project, name: "v-run-1" });
    const answer = await data(key, `query ($e: String!, $p: String!) { project(name: $p, entityName: $e) { internalId readOnly run(name: "v-run-1") { projectId user { id name username email } } } }`, { e: entity, p: project });
    const found = answer.project as { internalId: string; readOnly: boolean; run: { projectId: number; user: Record<string, unknown> } };
    expect(Number.isSafeInteger(found.run.projectId)).toBe(true);
    expect(String(found.run.projectId)).toBe(found.internalId);
    expect(found.readOnly).toBe(false);
    expect(found.run.user).toEqual({ id: expect.any(String), name: entity, username: entity, email: null });
  });

  it("lists a project's runs newest first, in pages (api.runs), and refuses run filters it cannot apply", async () => {
    const p = "listing";
    for (const name of ["l-1", "l-2", "l-3"]) {
      await data(key, UPSERT_RUN, { entity, project: p, name });
      await new Promise((resolve) => setTimeout(resolve, 5)); // distinct creation times
    }
    const page = `query ($e: String!, $p: String!, $cursor: String, $filters: JSONString) { project(name: $p, entityName: $e) {
      runCount(filters: $filters) runs(filters: $filters, after: $cursor, first: 2) { edges { node { name projectId } cursor } pageInfo { endCursor hasNextPage } } } }`;
    type Page = { project: { runCount: number; runs: { edges: { node: { name: string } }[]; pageInfo: { endCursor: string; hasNextPage: boolean } } } };
    const first = (await data(key, page, { e: entity, p, filters: "{}" })) as Page;
    expect(first.project.runCount).toBe(3);
    expect(first.project.runs.edges.map((edge) => edge.node.name)).toEqual(["l-3", "l-2"]);
    expect(first.project.runs.pageInfo.hasNextPage).toBe(true);
    const second = (await data(key, page, { e: entity, p, cursor: first.project.runs.pageInfo.endCursor })) as Page;
    expect(second.project.runs.edges.map((edge) => edge.node.name)).toEqual(["l-1"]);
    expect(second.project.runs.pageInfo.hasNextPage).toBe(false);
    const filtered = await graphql(key, page, { e: entity, p, filters: JSON.stringify({ state: "finished" }) });
    expect(filtered.body.errors?.[0]?.message).toContain("filtering runs");
    // Another entity's key sees no such project.
    const stranger = await createKey(uniqueEntity("wb-versions-other"));
    expect((await graphql(stranger, page, { e: entity, p })).body.data?.project).toBeNull();
  });

  it("logs an artifact with wandb-core 0.31's inputs; answers logged_by, used_by and the 0.31 fields", async () => {
    await data(key, UPSERT_RUN, { entity, project, name: "producer" });
    await data(key, UPSERT_RUN, { entity, project, name: "consumer" });
    const id = await logArtifact(key, entity, project, "producer", "data", "hello\n");

    const use = `mutation ($input: UseArtifactInput!) { useArtifact(input: $input) { artifact { id } } }`;
    const input = { entityName: entity, projectName: project, runName: "consumer", artifactID: id, artifactEntityName: null, artifactProjectName: null, usedAs: null, clientMutationId: null };
    await data(key, use, { input });
    await data(key, use, { input }); // twice: still one user
    const answer = await data(
      key,
      `query ($id: ID!) { artifact(id: $id) { digestAlgorithm createdBy { __typename ... on Run { name project { name internalId } } } usedBy { edges { node { name } } } } }`,
      { id },
    );
    expect(answer.artifact).toEqual({
      digestAlgorithm: "MANIFEST_MD5",
      createdBy: { __typename: "Run", name: "producer", project: { name: project, internalId: expect.any(String) } },
      usedBy: { edges: [{ node: { name: "consumer" } }] },
    });

    const membership = await data(key, `query ($e: String!, $p: String!) { project(name: $p, entityName: $e) { artifactCollectionMembership(name: "data:v0") { createdAt versionIndex } } }`, { e: entity, p: project });
    expect(membership.project).toEqual({ artifactCollectionMembership: { createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), versionIndex: 0 } });

    const linked = await graphql(key, `mutation ($input: LinkArtifactInput!) { linkArtifact(input: $input) { versionIndex } }`, { input: { artifactID: id, artifactPortfolioName: "elsewhere", entityName: entity, projectName: project } });
    expect(linked.body.errors?.[0]?.message).toContain("linking an artifact");
    expect((await data(key, `query { clientIDMapping(clientID: "x") { serverID } }`)).clientIDMapping).toBeNull();
  });

  it("refuses use_artifact for a run of another entity", async () => {
    await data(key, UPSERT_RUN, { entity, project, name: "owner-run" });
    const id = await logArtifact(key, entity, project, "owner-run", "mine", "mine\n");
    const otherEntity = uniqueEntity("wb-versions-intruder");
    const other = await createKey(otherEntity);
    await data(other, UPSERT_RUN, { entity: otherEntity, project, name: "intruder" });
    expect(await streamHistory(other, { entity: otherEntity, project, run: "intruder" }, 0, ['{"_step":0}'])).toBe(200);
    const reply = await graphql(other, `mutation ($input: UseArtifactInput!) { useArtifact(input: $input) { artifact { id } } }`, {
      input: { entityName: otherEntity, projectName: project, runName: "intruder", artifactID: id },
    });
    expect(reply.body.errors?.[0]?.message).toContain("not found");
  });
});
