// Logging an artifact through the W&B API (`run.log_artifact`), as wandb-core does it: create the
// artifact (PENDING), create its manifest, ask upload URLs for its files, PUT each file and the
// manifest to those URLs, commit. Until the commit the version is a pending record here with its
// uploaded files; the commit checks the manifest against what was uploaded and then stores the
// version: a `lora` artifact named after a model of the project becomes that model's checkpoint
// (its PEFT adapter converted for the engine), anything else a version of the artifact store.
// Identical content logged again under the same name is the existing version (W&B's digest
// deduplication), so nothing is uploaded twice. Files go to the blob store as they arrive.
//
// The commit is crash-safe and idempotent: one request at a time holds it (a lease on the pending
// record, renewed while it works, so a crashed holder's retry takes over within COMMIT_LEASE_MS);
// the version it stores has an id derived from the pending record (the artifact's version `_id`,
// or the checkpoint's job id), so a retry after any crash finds what the crashed attempt stored
// instead of storing a second version; marking the pending record committed comes last. Nothing
// here deletes a blob: files superseded, not in the manifest or of an abandoned log are removed by
// the blob collector once no record names them.
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Collection, Db, ObjectId } from "mongodb";
import type { ArtifactFile, Artifacts } from "../artifacts/index.js";
import { badRequest, conflict, notFound } from "../core/errors.js";
import { failpoint } from "../core/failpoints.js";
import type { ModelRecord, ModelRegistry } from "../models/index.js";
import { type BlobReferences, type BlobStore, type CopyLegacyBlob, type LegacyBlobOwner, lostLegacyBlob, readBlob } from "../store/index.js";
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
  /** The uploaded manifest's blob. */
  manifest_sha256: string | null;
  /** Before the blob store: the manifest's GridFS file (moved at start-up). */
  manifest_blob_id?: ObjectId | null;
  /** The GraphQL id of the version the commit made. */
  committed_as: string | null;
  /** The request committing it now, and until when (renewed while it works). */
  commit_lease?: string | null;
  commit_lease_until?: Date | null;
  created_at: Date;
}

/**
 * Makes a model's checkpoint from an uploaded PEFT adapter (services/wandb/lora-import.ts); `key`
 * names the import, so that a retried import answers the checkpoint an earlier attempt made.
 */
export type ImportCheckpoint = (model: ModelRecord, step: number | null, peft: Record<string, Uint8Array>, metadata: string, key: string) => Promise<{ checkpointId: string }>;

/** Artifact file paths as W&B allows them, minus anything that could climb out of a download root. */
const FILE_PATH = /^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))[^\0\\]{1,512}$/;
export const MANIFEST_LIMIT_BYTES = 16 * 2 ** 20;
/** A log that never committed (the client died) is removed with its files after this. */
const ABANDONED_AFTER_MS = 24 * 3600 * 1000;
const SWEEP_EVERY_MS = 3600 * 1000;
/** A commit's hold on its pending record: a crashed holder's retry waits at most this long. */
const COMMIT_LEASE_MS = 10_000;
/** How long a commit waits for another request committing the same artifact before a 409. */
const COMMIT_WAIT_MS = 2 * COMMIT_LEASE_MS;

export class ArtifactUploads implements BlobReferences, LegacyBlobOwner {
  private readonly pending: Collection<PendingArtifact>;
  private lastSweep = 0;

  constructor(
    db: Db,
    private readonly blobs: BlobStore,
    private readonly artifacts: Artifacts,
    private readonly views: ArtifactViews,
    private readonly registry: ModelRegistry,
    private readonly importCheckpoint: ImportCheckpoint,
  ) {
    this.pending = db.collection<PendingArtifact>("wandb_pending_artifacts");
  }

  async ensureIndexes(): Promise<void> {
    await this.pending.createIndex({ "files.sha256": 1 });
    await this.pending.createIndex({ manifest_sha256: 1 });
    await this.pending.createIndex({ created_at: 1 });
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
      manifest_sha256: null,
      committed_as: null,
      created_at: new Date(),
    };
    await this.pending.insertOne(record);
    return { pending: record };
  }

  /**
   * Removes logs older than a day: uncommitted ones (their files then go to the collector), and
   * committed ones' records (kept that long so `artifact.wait()` finds what the id turned into).
   * At most hourly.
   */
  private async sweepAbandoned(): Promise<void> {
    if (Date.now() - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = Date.now();
    await this.pending.deleteMany({ created_at: { $lt: new Date(Date.now() - ABANDONED_AFTER_MS) } });
  }

  /** Which of these blobs an artifact being logged has uploaded. */
  async referencedBlobs(names: readonly string[]): Promise<Set<string>> {
    const wanted = new Set(names);
    const held = new Set<string>();
    const cursor = this.pending.find({ $or: [{ "files.sha256": { $in: [...names] } }, { manifest_sha256: { $in: [...names] } }] }, { projection: { files: 1, manifest_sha256: 1 } });
    for await (const record of cursor) {
      for (const name of [record.manifest_sha256, ...record.files.map((file) => file.sha256)]) if (name && wanted.has(name)) held.add(name);
    }
    return held;
  }

  async migrateLegacyBlobs(copy: CopyLegacyBlob): Promise<number> {
    let changed = 0;
    for await (const record of this.pending.find({ $or: [{ "files.blob_id": { $exists: true } }, { manifest_blob_id: { $type: "objectId" } }] })) {
      const move = async (id: ObjectId) => (await copy(id))?.sha256 ?? lostLegacyBlob(id);
      const files = await Promise.all(record.files.map(async (file) => (file.blob_id ? { name: file.name, size: file.size, md5: file.md5, sha256: await move(file.blob_id) } : file)));
      const manifest = record.manifest_blob_id ? await move(record.manifest_blob_id) : (record.manifest_sha256 ?? null);
      await this.pending.updateOne({ _id: record._id }, { $set: { files, manifest_sha256: manifest }, $unset: { manifest_blob_id: "" } });
      changed++;
    }
    return changed;
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

  /** A PUT to a file's upload URL, streamed into the blob store: the bytes must have the MD5 the URL was issued for. */
  async receiveFile(pendingId: string, name: string, md5: string, content: AsyncIterable<Uint8Array>, maxBytes: number, signal: AbortSignal): Promise<void> {
    await this.stillOpen(pendingId);
    const blob = await this.blobs.write(content, { maxBytes, md5, signal });
    // Files arrive in parallel: each is pushed (never read-modify-written); a file sent again is
    // pushed again, and the newest entry of a name counts (uploadedFiles).
    const pushed = await this.pending.updateOne({ _id: pendingId, committed_as: null }, { $push: { files: { name, size: blob.size, sha256: blob.sha256, md5: blob.md5 } } });
    if (pushed.matchedCount === 0) throw notFound(`artifact upload ${pendingId} is over (committed or abandoned)`);
  }

  /** A PUT to the manifest's upload URL. */
  async receiveManifest(pendingId: string, content: AsyncIterable<Uint8Array>, maxBytes: number, signal: AbortSignal): Promise<void> {
    await this.stillOpen(pendingId);
    const blob = await this.blobs.write(content, { maxBytes: Math.min(maxBytes, MANIFEST_LIMIT_BYTES), signal });
    const set = await this.pending.updateOne({ _id: pendingId, committed_as: null }, { $set: { manifest_sha256: blob.sha256 } });
    if (set.matchedCount === 0) throw notFound(`artifact upload ${pendingId} is over (committed or abandoned)`);
  }

  /** Checked before a body is stored, so an upload to a finished log is refused without writing it. */
  private async stillOpen(pendingId: string): Promise<void> {
    const record = await this.pending.findOne({ _id: pendingId }, { projection: { committed_as: 1 } });
    if (!record || record.committed_as) throw notFound(`artifact upload ${pendingId} is over (committed or abandoned)`);
  }

  /** `commitArtifact`: the version, stored. Committing again (or at once) answers the same version. */
  async commit(entity: string, graphqlId: string): Promise<ArtifactView> {
    const record = await this.mustFind(entity, graphqlId);
    if (record.committed_as) return this.committedView(entity, record.committed_as);
    if (!record.manifest_sha256) throw badRequest(`artifact ${record.name} has no manifest uploaded yet`);
    const entries = parseManifest(await readBlob(this.blobs, record.manifest_sha256));
    const newest = uploadedFiles(record.files);
    const files: ArtifactFile[] = [];
    for (const [path, entry] of entries) {
      if (entry.ref !== undefined) throw badRequest(`artifact ${record.name}: reference entries (${path} -> ${entry.ref}) are not served here; add the file itself`);
      const uploaded = newest.get(path);
      if (!uploaded) throw badRequest(`artifact ${record.name}: the manifest lists ${path}, which was not uploaded`);
      if (uploaded.md5 !== entry.digest) throw badRequest(`artifact ${record.name}: ${path} was uploaded with MD5 ${uploaded.md5}, the manifest says ${entry.digest}`);
      files.push({ name: uploaded.name, size: uploaded.size, sha256: uploaded.sha256, md5: uploaded.md5 });
    }
    const lease = await this.takeCommit(record._id);
    if (lease === null) return this.awaitOtherCommit(entity, record);
    try {
      failpoint("wandb.commit.leased");
      const committedAs = await this.storeVersion(record, files);
      failpoint("wandb.commit.stored");
      await this.pending.updateOne({ _id: record._id }, { $set: { committed_as: committedAs, commit_lease: null, commit_lease_until: null } });
      failpoint("wandb.commit.marked");
      return await this.committedView(entity, committedAs);
    } finally {
      await lease.release();
    }
  }

  /** The version itself: a checkpoint of the model, or a version of the artifact store; its GraphQL id. */
  private async storeVersion(record: PendingArtifact, files: ArtifactFile[]): Promise<string> {
    const model = record.type === LORA_TYPE ? await this.registry.findByName(record.entity, record.project, record.name) : null;
    if (model) {
      const peft: Record<string, Uint8Array> = {};
      for (const file of files) peft[file.name.split("/").pop() as string] = await readBlob(this.blobs, file.sha256);
      const step = record.aliases.map((alias) => /^step(\d+)$/.exec(alias)).find((match) => match !== null);
      const { checkpointId } = await this.importCheckpoint(model, step ? Number(step[1]) : null, peft, record.metadata, `wandb-artifact:${record._id}`);
      return checkpointGraphqlId(checkpointId);
    }
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
    return artifactGraphqlId(stored._id);
  }

  /** Takes the commit of a pending record (free, or its holder's lease ran out); null: another request holds it. */
  private async takeCommit(pendingId: string): Promise<{ release(): Promise<void> } | null> {
    const token = randomUUID();
    const now = new Date();
    const taken = await this.pending.findOneAndUpdate(
      { _id: pendingId, committed_as: null, $or: [{ commit_lease: null }, { commit_lease: { $exists: false } }, { commit_lease_until: { $lt: now } }] },
      { $set: { commit_lease: token, commit_lease_until: new Date(now.getTime() + COMMIT_LEASE_MS) } },
      { returnDocument: "after" },
    );
    if (!taken) return null;
    const renew = setInterval(() => {
      this.pending.updateOne({ _id: pendingId, commit_lease: token }, { $set: { commit_lease_until: new Date(Date.now() + COMMIT_LEASE_MS) } }).catch(() => undefined);
    }, COMMIT_LEASE_MS / 3);
    return {
      release: async () => {
        clearInterval(renew);
        // Failed before the end: let a retry take it at once.
        await this.pending.updateOne({ _id: pendingId, commit_lease: token }, { $set: { commit_lease: null, commit_lease_until: null } }).catch(() => undefined);
      },
    };
  }

  /** Another request is committing this artifact: its version once it is done, else a 409 to retry. */
  private async awaitOtherCommit(entity: string, record: PendingArtifact): Promise<ArtifactView> {
    const deadline = Date.now() + COMMIT_WAIT_MS;
    while (Date.now() < deadline) {
      await sleep(100);
      const now = await this.pending.findOne({ _id: record._id });
      if (!now) break;
      if (now.committed_as) return this.committedView(entity, now.committed_as);
      // Its holder gave up or died: this request commits.
      if (!now.commit_lease || (now.commit_lease_until && now.commit_lease_until < new Date())) return this.commit(entity, artifactGraphqlId(record._id));
    }
    throw conflict(`artifact ${record.name} is being committed by another request; retry`);
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
