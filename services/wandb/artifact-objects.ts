// GraphQL objects of artifact versions, their collections (W&B's ArtifactSequence), types, files
// and manifests. Download URLs are signed and short-lived, like the cloud storage URLs W&B hands
// out; the manifest is written on the fly from the version's files.
import { manifestDigest, type ArtifactView } from "./artifact-views.js";
import { BOUNDED_LISTS } from "./query-limits.js";
import type { ResolverDeps } from "./resolver-deps.js";
import { b64, projectRef, runObject } from "./run-objects.js";

/**
 * Bound to the exact bytes: the file's blob (content hash) and the version's creation time, so a
 * URL of a deleted version never serves what replaced it (a step trained again has the same id).
 */
export function downloadUrl(deps: ResolverDeps, view: ArtifactView, name: string): string {
  const token = deps.signer.sign({ k: "download", e: view.entity, a: view.id, n: name, h: deps.views.blobOf(view, name) ?? "", c: view.createdAt.getTime() }, deps.transferTtlMs);
  return `${deps.baseUrl}/wandb/files/${token}/${encodeURIComponent(name.split("/").pop() ?? name)}`;
}

export function manifestUrl(deps: ResolverDeps, view: ArtifactView): string {
  const token = deps.signer.sign({ k: "manifest", e: view.entity, a: view.id, c: view.createdAt.getTime() }, deps.transferTtlMs);
  return `${deps.baseUrl}/wandb/files/${token}/wandb_manifest.json`;
}

/** The manifest of a committed version, as `wandb_manifest.json` holds it. */
export function manifestJson(view: ArtifactView): string {
  return JSON.stringify({
    version: 1,
    storagePolicy: "wandb-storage-policy-v1",
    storagePolicyConfig: { storageLayout: "V2" },
    contents: Object.fromEntries(view.files.map((file) => [file.name, { digest: file.md5, size: file.size, birthArtifactID: view.id }])),
  });
}

export function artifactTypeObject(entity: string, project: string, type: string) {
  return { id: b64(`ArtifactType:${entity}/${project}/${type}`), name: type, description: null, createdAt: new Date(0).toISOString() };
}

export function fileObject(deps: ResolverDeps, view: ArtifactView, file: ArtifactView["files"][number]) {
  const url = downloadUrl(deps, view, file.name);
  return {
    id: b64(`File:${view.id}/${file.name}`),
    name: file.name,
    displayName: file.name.split("/").pop() ?? file.name,
    url,
    directUrl: url,
    uploadUrl: null,
    uploadHeaders: [],
    uploadMultipartUrls: null,
    storagePath: null,
    sizeBytes: file.size,
    mimetype: null,
    updatedAt: view.createdAt.toISOString(),
    digest: file.md5,
    md5: file.md5,
    artifact: { id: view.id },
  };
}

/** A page of a list, as W&B's connections: `after` is the index cursor of the previous page. */
export function connection<T>(items: readonly T[], args: { after?: string | null; first?: number | null }, cursorOf: (item: T, index: number) => string = (_, index) => String(index)) {
  const start = args.after ? Number(args.after) + 1 : 0;
  const from = Number.isSafeInteger(start) && start >= 0 ? start : 0;
  const count = args.first && args.first > 0 ? Math.min(args.first, 1000) : 1000;
  const page = items.slice(from, from + count);
  return {
    totalCount: items.length,
    pageInfo: { startCursor: page.length > 0 ? String(from) : null, endCursor: page.length > 0 ? String(from + page.length - 1) : null, hasNextPage: from + page.length < items.length, hasPreviousPage: from > 0 },
    edges: page.map((item, index) => ({ node: item, cursor: cursorOf(item, from + index) })),
  };
}

export function sequenceObject(deps: ResolverDeps, view: Pick<ArtifactView, "entity" | "project" | "name" | "type" | "createdAt">) {
  const versions = () => deps.views.versions(view.entity, view.project, view.name, view.type);
  const project = projectRef(view);
  return {
    __typename: "ArtifactSequence",
    id: b64(`ArtifactSequence:${view.entity}/${view.project}/${view.name}`),
    name: view.name,
    description: null,
    createdAt: view.createdAt.toISOString(),
    project,
    latestArtifact: async () => {
      const latest = (await versions()).at(-1);
      return latest ? artifactObject(deps, latest) : null;
    },
    artifacts: async (args: { after?: string | null; first?: number | null }) => {
      const all = (await versions()).reverse(); // newest first, as W&B lists them
      const page = connection(all, args);
      return { ...page, edges: page.edges.map((edge) => ({ node: artifactObject(deps, edge.node), version: `v${edge.node.versionIndex}`, cursor: edge.cursor })) };
    },
    artifactMembership: async ({ aliasName }: { aliasName: string }) => {
      const found = await deps.views.byName(view.entity, view.project, view.name, aliasName, view.type);
      return found ? membershipObject(deps, found) : null;
    },
  };
}

export function membershipObject(deps: ResolverDeps, view: ArtifactView) {
  const artifact = artifactObject(deps, view);
  return { id: artifact.id, versionIndex: view.versionIndex, createdAt: view.createdAt.toISOString(), aliases: artifact.aliases, artifactCollection: artifact.artifactSequence, artifact, files: artifact.files };
}

export function artifactObject(deps: ResolverDeps, view: ArtifactView) {
  const sequence = sequenceObject(deps, view);
  const size = view.files.reduce((sum, file) => sum + file.size, 0);
  const manifest = manifestUrl(deps, view);
  return {
    id: view.id,
    artifactSequence: sequence,
    versionIndex: view.versionIndex,
    artifactType: artifactTypeObject(view.entity, view.project, view.type),
    description: view.description,
    metadata: view.metadata,
    ttlDurationSeconds: -1,
    ttlIsInherited: false,
    tags: [],
    historyStep: null,
    state: "COMMITTED",
    size,
    digest: manifestDigest(view.files),
    commitHash: null,
    fileCount: view.files.length,
    createdAt: view.createdAt.toISOString(),
    updatedAt: view.createdAt.toISOString(),
    aliases: view.aliases.map((alias) => ({ id: b64(`ArtifactAlias:${view.id}/${alias}`), alias, artifactCollection: sequence })),
    currentManifest: {
      id: b64(`ArtifactManifest:${view.id}`),
      file: { id: b64(`File:${view.id}/wandb_manifest.json`), name: "wandb_manifest.json", displayName: "wandb_manifest.json", url: manifest, directUrl: manifest, uploadUrl: null, uploadHeaders: [], sizeBytes: manifestJson(view).length },
    },
    files: (args: { names?: string[] | null; after?: string | null; first?: number | null }) => {
      const files = args.names ? view.files.filter((file) => args.names?.includes(file.name)) : view.files;
      return connection(
        files.map((file) => fileObject(deps, view, file)),
        args,
      );
    },
    filesByManifestEntries: (args: { entries?: { name: string }[] | null }) => {
      const names = args.entries?.map((entry) => entry.name);
      const files = names ? view.files.filter((file) => names.includes(file.name)) : view.files;
      return connection(files.map((file) => fileObject(deps, view, file)), {});
    },
    digestAlgorithm: "MANIFEST_MD5",
    // The run that logged the version (for a checkpoint: its model's run).
    createdBy: async () => {
      const found = view.runId === null ? null : await deps.runs.find(view.entity, view.project, view.runId);
      return found ? { __typename: "Run", ...runObject(deps, found, found.name, () => projectRef(found.run)) } : null;
    },
    usedBy: async () => {
      const users = await deps.runs.usersOf(view.entity, view.id, BOUNDED_LISTS["Artifact.usedBy"] ?? 100);
      return connection(
        users.map((found) => runObject(deps, found, found.name, () => projectRef(found.run))),
        {},
      );
    },
  };
}
