// The root of the served W&B GraphQL schema (schema.graphql): queries and mutations over the
// caller's entity only. Another entity's projects, runs and artifacts are absent (null or
// not-found errors), never visible. Objects below the root are built by run-objects.ts and
// artifact-objects.ts.
import { badRequest, notFound, unimplemented } from "../core/errors.js";
import { artifactGraphqlId, type ArtifactView } from "./artifact-views.js";
import { artifactObject, artifactTypeObject, membershipObject, sequenceObject } from "./artifact-objects.js";
import { b64, entityObject, parseObject, projectRef, runIdOfStorageId, runObject, userObject } from "./run-objects.js";
import type { ResolverDeps } from "./resolver-deps.js";
import { projectRunFields } from "./run-listing.js";
import { MANIFEST_LIMIT_BYTES } from "./artifact-uploads.js";
import { checkBytes, FIELD_LIMITS } from "./field-limits.js";

const DEFAULT_PROJECT = "uncategorized";
type Args = Record<string, unknown>;
const str = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);

export function rootValue(deps: ResolverDeps) {
  /** The caller's entity when `name` is it or absent; null for any other (it does not exist for them). */
  const ownEntity = (name: unknown): string | null => {
    const given = str(name);
    return given === null || given === deps.entity ? deps.entity : null;
  };
  const mustOwn = (name: unknown): string => {
    const entity = ownEntity(name);
    if (entity === null) throw notFound(`entity ${String(name)} not found`);
    return entity;
  };

  const project = (entity: string, name: string) => ({
    ...projectRef({ entity, project: name }),
    ...projectRunFields(deps, entity, name),
    bucket: (args: Args) => runOf(entity, name, String(args.name)),
    run: (args: Args) => runOf(entity, name, String(args.name)),
    artifact: async (args: Args) => {
      const view = await byFullName(entity, name, String(args.name), null);
      return view ? artifactObject(deps, view) : null;
    },
    artifactType: (args: Args) => artifactTypeOf(entity, name, String(args.name)),
    artifactCollection: async (args: Args) => collectionOf(entity, name, String(args.name), null),
    artifactCollectionMembership: async (args: Args) => {
      const view = await byFullName(entity, name, String(args.name), null);
      return view ? membershipObject(deps, view) : null;
    },
  });

  const runOf = async (entity: string, projectName: string, runName: string) => {
    const found = await deps.runs.find(entity, projectName, runName);
    return found ? runObject(deps, found, runName, () => project(entity, projectName)) : null;
  };

  /** `name:alias` (or `name:vN`, or just `name` = latest) in a project. */
  const byFullName = async (entity: string, projectName: string, fullName: string, type: string | null): Promise<ArtifactView | null> => {
    const colon = fullName.lastIndexOf(":");
    const [name, selector] = colon > 0 ? [fullName.slice(0, colon), fullName.slice(colon + 1)] : [fullName, "latest"];
    return deps.views.byName(entity, projectName, name, selector, type);
  };

  /** A collection, or null when it has no version; its versions are listed only when asked for. */
  const collectionOf = async (entity: string, projectName: string, name: string, type: string | null) => {
    const newest = await deps.views.byName(entity, projectName, name, "latest", type);
    return newest ? sequenceObject(deps, newest) : null;
  };

  const artifactTypeOf = async (entity: string, projectName: string, type: string) => ({
    ...artifactTypeObject(entity, projectName, type),
    artifact: async (args: Args) => {
      const view = await byFullName(entity, projectName, String(args.name), type);
      return view ? artifactObject(deps, view) : null;
    },
    artifactCollection: (args: Args) => collectionOf(entity, projectName, String(args.name), type),
  });

  const manifestObject = (pendingId: string, name: string) => {
    // `s`: the most the upload may send (the route reads no more).
    const token = deps.signer.sign({ k: "artifact_manifest", a: pendingId, s: MANIFEST_LIMIT_BYTES }, deps.transferTtlMs);
    return {
      id: b64(`ArtifactManifest:${pendingId}`),
      file: { id: b64(`File:${pendingId}/${name}`), name, displayName: name, uploadUrl: `${deps.baseUrl}/wandb/uploads/${token}`, uploadHeaders: [], directUrl: "", sizeBytes: 0 },
    };
  };

  const pendingObject = (pending: { _id: string; name: string; entity: string; project: string; type: string; created_at: Date }, graphqlId: string) => ({
    id: graphqlId,
    state: "PENDING",
    versionIndex: null,
    digest: "",
    size: 0,
    fileCount: 0,
    aliases: [],
    tags: [],
    metadata: "{}",
    description: null,
    ttlDurationSeconds: -1,
    ttlIsInherited: false,
    createdAt: pending.created_at.toISOString(),
    artifactType: artifactTypeObject(pending.entity, pending.project, pending.type),
    artifactSequence: sequenceObject(deps, { entity: pending.entity, project: pending.project, name: pending.name, type: pending.type, createdAt: pending.created_at }),
    currentManifest: null,
  });

  return {
    // --- queries ------------------------------------------------------------------------------
    viewer: () => ({
      ...userObject(deps.entity),
      apiKeys: { edges: [] },
      teams: { edges: [{ node: entityObject(deps.entity) }] },
    }),
    serverInfo: () => ({
      cliVersionInfo: {},
      latestLocalVersionInfo: { outOfDate: false, latestVersionString: deps.serverVersion, versionOnThisInstanceString: deps.serverVersion },
      features: [],
    }),
    model: (args: Args) => {
      const entity = ownEntity(args.entityName);
      return entity === null ? null : project(entity, str(args.name) ?? DEFAULT_PROJECT);
    },
    project: (args: Args) => {
      const entity = ownEntity(args.entityName);
      return entity === null ? null : project(entity, str(args.name) ?? DEFAULT_PROJECT);
    },
    entity: (args: Args) => {
      const entity = ownEntity(args.name);
      return entity === null ? null : entityObject(entity);
    },
    artifact: async (args: Args) => {
      const id = String(args.id);
      const view = (await deps.views.byId(deps.entity, id)) ?? (await deps.uploads.resolveCommitted(deps.entity, id));
      if (view) return artifactObject(deps, view);
      const pending = await deps.uploads.find(deps.entity, id);
      return pending ? pendingObject(pending, id) : null;
    },
    clientIDMapping: () => null,

    // --- runs ---------------------------------------------------------------------------------
    upsertBucket: async ({ input }: { input: Args }) => {
      const entity = mustOwn(input.entityName);
      const fromStorageId = str(input.id) ? runIdOfStorageId(String(input.id), entity) : null;
      const projectName = str(input.modelName) ?? fromStorageId?.project ?? DEFAULT_PROJECT;
      const runId = str(input.name) ?? fromStorageId?.runId ?? null;
      const config = str(input.config);
      const summary = str(input.summaryMetrics);
      // Sizes before parsing (the store checks what it stores again, wandb-runs.ts).
      checkBytes("the run config", config, FIELD_LIMITS.configBytes);
      checkBytes("the run summary", summary, FIELD_LIMITS.summaryBytes);
      const { found, inserted } = await deps.runs.upsert(entity, projectName, runId, {
        display_name: str(input.displayName) ?? undefined,
        notes: str(input.notes) ?? str(input.description) ?? undefined,
        job_type: str(input.jobType) ?? undefined,
        group: str(input.groupName) ?? undefined,
        tags: Array.isArray(input.tags) ? input.tags.filter((tag): tag is string => typeof tag === "string") : undefined,
        config: config !== null ? JSON.stringify(parseObject(config)) : undefined,
        summary: summary !== null ? JSON.stringify(parseObject(summary)) : undefined,
        state: str(input.state) ?? undefined,
      });
      const name = runId ?? found.run._id;
      return { bucket: runObject(deps, found, name, () => project(entity, projectName)), inserted };
    },
    createRunFiles: async ({ input }: { input: Args }) => {
      const entity = mustOwn(input.entityName);
      const found = await deps.runs.find(entity, String(input.projectName), String(input.runName));
      if (!found) throw notFound(`run ${entity}/${String(input.projectName)}/${String(input.runName)} not found`);
      const files = Array.isArray(input.files) ? input.files.map(String) : [];
      return {
        runID: found.run._id,
        uploadHeaders: [],
        files: files.map((name) => ({ name, uploadUrl: `${deps.baseUrl}/wandb/uploads/${deps.signer.sign({ k: "run_file", r: found.run._id, n: name }, deps.transferTtlMs)}` })),
      };
    },

    // --- logging an artifact ------------------------------------------------------------------
    createArtifact: async ({ input }: { input: Args }) => {
      const entity = mustOwn(input.entityName);
      const names = [str(input.artifactCollectionName), ...(Array.isArray(input.artifactCollectionNames) ? input.artifactCollectionNames.map(str) : [])].filter((n): n is string => n !== null);
      const name = names[0];
      if (!name) throw badRequest("createArtifact needs artifactCollectionName(s)");
      if (new Set(names).size > 1) throw unimplemented("logging one artifact into several collections");
      const aliases = Array.isArray(input.aliases) ? input.aliases.map((a) => String((a as Args).alias)).filter((a) => a !== "") : [];
      checkBytes("the artifact metadata", str(input.metadata), FIELD_LIMITS.metadataBytes);
      checkBytes("the artifact description", str(input.description), FIELD_LIMITS.textBytes);
      const created = await deps.uploads.create({
        entity,
        project: String(input.projectName),
        name,
        type: String(input.artifactTypeName),
        runId: str(input.runName),
        digest: String(input.digest),
        description: str(input.description),
        metadata: JSON.stringify(parseObject(str(input.metadata) ?? "{}")),
        aliases,
      });
      if ("view" in created) return { artifact: artifactObject(deps, created.view) };
      const pending = created.pending;
      return { artifact: pendingObject(pending, artifactGraphqlId(pending._id)) };
    },
    createArtifactManifest: async ({ input }: { input: Args }) => {
      const pending = await deps.uploads.checkFiles(deps.entity, String(input.artifactID), []);
      return { artifactManifest: manifestObject(pending._id, str(input.name) ?? "wandb_manifest.json") };
    },
    updateArtifactManifest: async ({ input }: { input: Args }) => {
      const id = Buffer.from(String(input.artifactManifestID), "base64").toString("utf8");
      if (!id.startsWith("ArtifactManifest:")) throw notFound("unknown artifact manifest");
      const pendingId = id.slice("ArtifactManifest:".length);
      await deps.uploads.checkFiles(deps.entity, artifactGraphqlId(pendingId), []);
      return { artifactManifest: manifestObject(pendingId, "wandb_manifest.json") };
    },
    createArtifactFiles: async ({ input }: { input: Args }) => {
      const specs = Array.isArray(input.artifactFiles) ? (input.artifactFiles as Args[]) : [];
      const edges = [];
      for (const spec of specs) {
        const artifactId = String(spec.artifactID);
        const name = String(spec.name);
        const pending = await deps.uploads.checkFiles(deps.entity, artifactId, [name]);
        const token = deps.signer.sign({ k: "artifact_file", a: pending._id, n: name, m: String(spec.md5) }, deps.transferTtlMs);
        edges.push({
          node: {
            id: b64(`File:${pending._id}/${name}`),
            name,
            displayName: name.split("/").pop() ?? name,
            uploadUrl: `${deps.baseUrl}/wandb/uploads/${token}`,
            uploadHeaders: [],
            uploadMultipartUrls: null,
            storagePath: `${pending._id}/${name}`,
            artifact: { id: artifactId },
          },
          cursor: String(edges.length),
        });
      }
      return { files: { totalCount: edges.length, pageInfo: { startCursor: null, endCursor: null, hasNextPage: false, hasPreviousPage: false }, edges } };
    },
    completeMultipartUploadArtifact: () => {
      throw unimplemented("multipart artifact uploads (files are uploaded with one PUT each here)");
    },
    commitArtifact: async ({ input }: { input: Args }) => ({ artifact: artifactObject(deps, await deps.uploads.commit(deps.entity, String(input.artifactID))) }),
    useArtifact: async ({ input }: { input: Args }) => {
      const entity = mustOwn(input.entityName);
      const view = await deps.views.byId(deps.entity, String(input.artifactID));
      if (!view) throw notFound("artifact not found");
      const run = await deps.runs.find(entity, String(input.projectName), String(input.runName));
      if (!run) throw notFound(`run ${entity}/${String(input.projectName)}/${String(input.runName)} not found`);
      await deps.runs.recordUse(run, view.id);
      return { artifact: artifactObject(deps, view) };
    },
    linkArtifact: () => {
      throw unimplemented("linking an artifact into another collection or a registry (artifact.link, run.link_artifact)");
    },

    // --- changing a committed artifact (artifact.save()) --------------------------------------
    updateArtifact: async ({ input }: { input: Args }) => {
      const view = await deps.views.byId(deps.entity, String(input.artifactID));
      if (!view) throw notFound("artifact not found");
      const metadata = str(input.metadata);
      checkBytes("the artifact metadata", metadata, FIELD_LIMITS.metadataBytes);
      checkBytes("the artifact description", str(input.description), FIELD_LIMITS.textBytes);
      const aliases = Array.isArray(input.aliases) ? input.aliases.map((a) => String((a as Args).alias)) : undefined;
      const updated = await deps.views.update(view, {
        metadata: metadata !== null ? JSON.stringify(parseObject(metadata)) : undefined,
        description: input.description === undefined ? undefined : str(input.description),
        aliases,
      });
      return { artifact: artifactObject(deps, updated) };
    },
    addAliases: async ({ input }: { input: Args }) => {
      const view = await deps.views.byId(deps.entity, String(input.artifactID));
      if (!view) throw notFound("artifact not found");
      const added = Array.isArray(input.aliases) ? input.aliases.map((a) => String((a as Args).alias)) : [];
      await deps.views.update(view, { aliases: [...view.aliases, ...added] });
      return { success: true };
    },
    deleteAliases: async ({ input }: { input: Args }) => {
      const view = await deps.views.byId(deps.entity, String(input.artifactID));
      if (!view) throw notFound("artifact not found");
      const removed = Array.isArray(input.aliases) ? input.aliases.map((a) => String((a as Args).alias)) : [];
      await deps.views.update(view, { aliases: view.aliases.filter((alias) => !removed.includes(alias)) });
      return { success: true };
    },
  };
}
