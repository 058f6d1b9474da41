// Logging an artifact through the W&B API (`run.log_artifact`), as wandb-core does it: create the
// artifact (PENDING), create its manifest, ask upload URLs for its files, PUT each file and the
// manifest to those URLs, commit. Until the commit the version is a pending record here with its
// uploaded files; the commit checks the manifest against what was uploaded and then stores the
// version: a `lora` artifact named after a model of the project becomes that model's checkpoint
// (its PEFT adapter converted for the engine), anything else a version of the artifact store.
// Identical content logged again under the same name is the existing version (W&B's digest
// deduplication), so nothing is uploaded twice.
import { createHash, randomUUID } from "node:crypto";
import type { Collection, Db, ObjectId } from "mongodb";
import type { ArtifactFile, Artifacts } from "../artifacts/index.js";
import { badRequest, conflict, notFound } from "../core/errors.js";
import type { ModelRecord, ModelRegistry } from "../models/index.js";
import type { Blobs } from "../store/index.js";
import { artifactGraphqlId, checkpointGraphqlId, decodeArtifactId, LORA_TYPE, type ArtifactView, type ArtifactViews } from "./artifact-views.js";

export interface PendingArtifact {
  _id: string;
  entity: string;
  project: string;
  name: string;
  type: string;
  run_id: string | null;
  description: string | null;
  metadata: string;
  digest: string;
  aliases: string[];
  files: ArtifactFile[];
  manifest_blob_id: ObjectId | null;
  /** The GraphQL id of the version the commit made. */
  committed_as: string | null;
  created_at: Date;
}

/** Makes a model's checkpoint from an uploaded PEFT adapter (services/wandb/lora-import.ts). */
export type ImportCheckpoint = (model: ModelRecord, step: number | null, peft: Record<string, Uint8Array>, metadata: string) => Promise<{ checkpointId: string }>;

/** Artifact file paths as W&B allows them, minus anything that could climb out of a download root. */
const FILE_PATH = /^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))[^\0\\]{1,512}$/;
export const MANIFEST_LIMIT_BYTES = 16 * 2 ** 20;
/** A log that never committed (the client died) is removed with its files after this. */
const ABANDONED_AFTER_MS = 24 * 3600 * 1000;
const SWEEP_EVERY_MS = 3600 * 1000;

export class ArtifactUploads {
  private readonly pending: Collection<PendingArtifact>;
  private lastSweep = 0;

  constructor(
    db: Db,
    private readonly blobs: Blobs,
    private readonly artifacts: Artifacts,
    private readonly views: ArtifactViews,
    private readonly registry: ModelRegistry,
    private readonly importCheckpoint: ImportCheckpoint,
  ) {
    this.pending = db.collection<PendingArtifact>("wandb_pending_artifacts");
  }

  /** `createArtifact`: a committed version with the same digest, or a new pending one. */
  async create(input: {
    entity: string;
    project: string;
    name: string;
    type: string;
    runId: string | null;
    digest: string;
    description: string | null;
    metadata: string;
    aliases: string[];
  }): Promise<{ view: ArtifactView } | { pending: PendingArtifact }> {
    await this.sweepAbandoned();
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(input.name)) throw badRequest(`artifact name "${input.name}" may hold only letters, digits, '-', '_' and '.'`);
    const existingType = await this.views.collectionType(input.entity, input.project, input.name);
    if (existingType !== null && existingType !== input.type) {
      throw conflict(`artifact ${input.name} of project ${input.project} has type ${existingType}, not ${input.type}`);
    }
    if (input.type !== LORA_TYPE) {
      const same = await this.artifacts.findByDigest(input.entity, input.project, input.name, input.digest);
      if (same) {
        const view = await this.views.artifactView(same);
        return { view: input.aliases.length > 0 ? await this.views.update(view, { aliases: [...new Set([...(same.aliases ?? []), ...input.aliases])] }) : view };
      }
    }
    const record: PendingArtifact = {
      _id: randomUUID(),
      entity: input.entity,
      project: input.project,
      name: input.name,
      type: input.type,
      run_id: input.runId,
      description: input.description,
      metadata: input.metadata,
      digest: input.digest,
      aliases: input.aliases,
      files: [],
      manifest_blob_id: null,
      committed_as: null,
      created_at: new Date(),
    };
    await this.pending.insertOne(record);
    return { pending: record };
  }

  /**
   * Removes logs older than a day: uncommitted ones with their uploaded files, committed ones'
   * records (kept that long so `artifact.wait()` finds what the id turned into). At most hourly.
   */
  private async sweepAbandoned(): Promise<void> {
    if (Date.now() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = Date.now();
    const old = await this.pending.find({ created_at: { $lt: new Date(Date.now() - ABANDONED_AFTER_MS) } }).toArray();
    for (const record of old) {
      if (!record.committed_as) {
        for (const file of record.files) await this.blobs.delete(file.blob_id);
        if (record.manifest_blob_id) await this.blobs.delete(record.manifest_blob_id);
      }
      await this.pending.deleteOne({ _id: record._id });
    }
  }

  /** The pending artifact behind a GraphQL id, of the caller's entity. */
  async find(entity: string, graphqlId: string): Promise<PendingArtifact | null> {
    const raw = decodeArtifactId(graphqlId);
    const record = raw === null ? null : await this.pending.findOne({ _id: raw });
    return record && record.entity === entity ? record : null;
  }

  private async mustFind(entity: string, graphqlId: string): Promise<PendingArtifact> {
    const record = await this.find(entity, graphqlId);
    if (!record) throw notFound(`artifact ${graphqlId} is not being logged (unknown id, or committed)`);
    return record;
  }

  /** Checks that files may be uploaded to the pending artifact under these names. */
  async checkFiles(entity: string, graphqlId: string, names: readonly string[]): Promise<PendingArtifact> {
    const record = await this.mustFind(entity, graphqlId);
    if (record.committed_as) throw conflict(`artifact ${record.name} is committed; its files cannot change`);
    for (const name of names) if (!FILE_PATH.test(name)) throw badRequest(`artifact file path "${name}" must be relative, without '..' or '\\'`);
    return record;
  }

  /** A PUT to a file's upload URL: the bytes must have the MD5 the URL was issued for. */
  async receiveFile(pendingId: string, name: string, md5: string, content: Buffer): Promise<void> {
    const actual = createHash("md5").update(content).digest("base64");
    if (actual !== md5) throw badRequest(`the uploaded ${name} has MD5 ${actual}, not the ${md5} it was announced with`);
    const record = await this.pending.findOne({ _id: pendingId });
    if (!record || record.committed_as) throw notFound(`artifact upload ${pendingId} is over (committed or abandoned)`);
    const blobId = await this.blobs.put(`${record.name}/${name}`, content, { kind: "artifact_file", artifact: `${record.entity}/${record.project}/${record.name}` });
    // Files arrive in parallel: each is pushed (never read-modify-written); a file sent again is
    // pushed again, and the newest entry of a name counts (uploadedFiles).
    await this.pending.updateOne({ _id: pendingId }, { $push: { files: { name, size: content.byteLength, blob_id: blobId, md5 } } });
  }

  /** A PUT to the manifest's upload URL. */
  async receiveManifest(pendingId: string, content: Buffer): Promise<void> {
    if (content.byteLength > MANIFEST_LIMIT_BYTES) throw badRequest(`an artifact manifest is limited to ${MANIFEST_LIMIT_BYTES} bytes`);
    const record = await this.pending.findOne({ _id: pendingId });
    if (!record || record.committed_as) throw notFound(`artifact upload ${pendingId} is over (committed or abandoned)`);
    const blobId = await this.blobs.put(`${record.name}/wandb_manifest.json`, content, { kind: "artifact_manifest" });
    await this.pending.updateOne({ _id: pendingId }, { $set: { manifest_blob_id: blobId } });
    if (record.manifest_blob_id) await this.blobs.delete(record.manifest_blob_id);
  }

  /** `commitArtifact`: the version, stored. Committing again answers the same version. */
  async commit(entity: string, graphqlId: string): Promise<ArtifactView> {
    const record = await this.mustFind(entity, graphqlId);
    if (record.committed_as) return this.committedView(entity, record.committed_as);
    if (!record.manifest_blob_id) throw badRequest(`artifact ${record.name} has no manifest uploaded yet`);
    const entries = parseManifest(await this.blobs.get(record.manifest_blob_id));
    const newest = uploadedFiles(record.files);
    const files: ArtifactFile[] = [];
    for (const [path, entry] of entries) {
      if (entry.ref !== undefined) throw badRequest(`artifact ${record.name}: reference entries (${path} -> ${entry.ref}) are not served here; add the file itself`);
      const uploaded = newest.get(path);
      if (!uploaded) throw badRequest(`artifact ${record.name}: the manifest lists ${path}, which was not uploaded`);
      if (uploaded.md5 !== entry.digest) throw badRequest(`artifact ${record.name}: ${path} was uploaded with MD5 ${uploaded.md5}, the manifest says ${entry.digest}`);
      files.push(uploaded);
    }
    const model = record.type === LORA_TYPE ? await this.registry.findByName(record.entity, record.project, record.name) : null;
    let committedAs: string;
    if (model) {
      const peft: Record<string, Uint8Array> = {};
      for (const file of files) peft[file.name.split("/").pop() as string] = await this.blobs.get(file.blob_id);
      const step = record.aliases.map((alias) => /^step(\d+)$/.exec(alias)).find((match) => match !== null);
      const { checkpointId } = await this.importCheckpoint(model, step ? Number(step[1]) : null, peft, record.metadata);
      committedAs = checkpointGraphqlId(checkpointId);
    } else {
      const stored = await this.artifacts.insertVersion({
        _id: record._id,
        entity: record.entity,
        project: record.project,
        name: record.name,
        type: record.type,
        files,
        aliases: record.aliases,
        metadata: record.metadata,
        description: record.description,
        digest: record.digest,
        run_id: record.run_id,
      });
      committedAs = artifactGraphqlId(stored._id);
    }
    await this.pending.updateOne({ _id: record._id }, { $set: { committed_as: committedAs } });
    // Blobs no version holds: files sent again (superseded) or not in the manifest, and, for a
    // checkpoint, every upload (it keeps copies in the adapters' bucket).
    const kept = new Set(model ? [] : files.map((file) => file.blob_id.toHexString()));
    for (const file of record.files) if (!kept.has(file.blob_id.toHexString())) await this.blobs.delete(file.blob_id);
    await this.blobs.delete(record.manifest_blob_id); // served manifests are written from the version's files
    return this.committedView(entity, committedAs);
  }

  /** The committed version a pending id turned into (artifact.wait() asks by the id it was given). */
  async resolveCommitted(entity: string, graphqlId: string): Promise<ArtifactView | null> {
    const record = await this.find(entity, graphqlId);
    return record?.committed_as ? this.views.byId(entity, record.committed_as) : null;
  }

  private async committedView(entity: string, graphqlId: string): Promise<ArtifactView> {
    const view = await this.views.byId(entity, graphqlId);
    if (!view) throw notFound("the committed artifact no longer exists");
    return view;
  }
}

/** The newest upload of each file name. */
function uploadedFiles(files: readonly ArtifactFile[]): Map<string, ArtifactFile> {
  const newest = new Map<string, ArtifactFile>();
  for (const file of files) newest.set(file.name, file);
  return newest;
}

interface ManifestEntry {
  digest: string;
  size: number | null;
  ref?: string;
}

function parseManifest(content: Buffer): Map<string, ManifestEntry> {
  let json: unknown;
  try {
    json = JSON.parse(content.toString("utf8"));
  } catch {
    throw badRequest("the artifact manifest is not JSON");
  }
  const contents = typeof json === "object" && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>).contents : undefined;
  if (typeof contents !== "object" || contents === null || Array.isArray(contents)) throw badRequest("the artifact manifest has no contents object");
  const entries = new Map<string, ManifestEntry>();
  for (const [path, value] of Object.entries(contents as Record<string, unknown>)) {
    const entry = typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
    if (typeof entry.digest !== "string") throw badRequest(`the manifest entry ${path} has no digest`);
    entries.set(path, { digest: entry.digest, size: typeof entry.size === "number" ? entry.size : null, ...(typeof entry.ref === "string" ? { ref: entry.ref } : {}) });
  }
  return entries;
}
