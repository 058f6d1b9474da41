// Artifacts: versioned named file sets (SFT data, and whatever the W&B API logs) of an entity and
// project, their files in the blob store (named by content hash; this collection holds only
// metadata). Versions are numbered from 0 per (entity, project, name); a unique index settles
// concurrent uploads of one name. W&B's fields (aliases, metadata, digest, each file's MD5) are
// kept for the W&B API (services/wandb); `latest` is never stored: it is the highest version.
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Collection, Db, ObjectId } from "mongodb";
import { badRequest, conflict, notFound } from "../core/errors.js";
import { type BlobReferences, type BlobStore, type CopyLegacyBlob, isDuplicateKey, type LegacyBlobOwner, lostLegacyBlob, type OpenedBlob, readBlob, type StoredBlob } from "../store/index.js";

export interface ArtifactRecord {
  _id: string;
  entity: string;
  project: string;
  name: string;
  version: number;
  type: string;
  files: ArtifactFile[];
  /** Set when a model's SFT job uses it, so deleting the model deletes it. */
  model_id: string | null;
  created_at: Date;
  /** Aliases given when logged or saved (W&B's; at most one version of a name holds each). */
  aliases?: string[];
  /** W&B metadata, JSON text (keys may hold '.' and '$'). */
  metadata?: string;
  description?: string | null;
  /** W&B's manifest digest (identical content logged again is the same version). */
  digest?: string | null;
  /** The run that logged it through the W&B API. */
  run_id?: string | null;
  /** Raised by every change of `files`: a change applies only to the revision it was decided on. */
  rev?: number;
}

export interface ArtifactFile {
  name: string;
  size: number;
  /** The content's blob (its SHA-256). */
  sha256: string;
  /** MD5 of the content, base64 (W&B's file digest); absent on files stored before it was kept. */
  md5?: string;
  /** Before the blob store: the GridFS file (moved at start-up). */
  blob_id?: ObjectId;
}

/** A file already in the blob store, under the name it takes in the artifact. */
export interface StoredFile {
  filename: string;
  blob: StoredBlob;
}

export type NewArtifactVersion = Pick<ArtifactRecord, "entity" | "project" | "name" | "type" | "files"> &
  Partial<Pick<ArtifactRecord, "_id" | "aliases" | "metadata" | "description" | "digest" | "run_id">>;

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** How long concurrent uploads of one name keep retrying for a version number before a 409. */
const INSERT_DEADLINE_MS = 30_000;

export class Artifacts implements BlobReferences, LegacyBlobOwner {
  private readonly artifacts: Collection<ArtifactRecord>;

  constructor(
    db: Db,
    private readonly blobs: BlobStore,
  ) {
    this.artifacts = db.collection<ArtifactRecord>("artifacts");
  }

  async ensureIndexes(): Promise<void> {
    await this.artifacts.createIndex({ entity: 1, project: 1, name: 1, version: 1 }, { unique: true });
    await this.artifacts.createIndex({ model_id: 1 });
    await this.artifacts.createIndex({ "files.sha256": 1 });
  }

  /** Throws 400 unless every name may be a file of an artifact, each given once. */
  checkFileNames(names: readonly string[]): void {
    for (const name of names) if (!FILE_NAME.test(name)) throw badRequest(`filename "${name}" must be a plain file name`);
    const repeated = names.find((name, index) => names.indexOf(name) !== index);
    if (repeated) throw badRequest(`the file ${repeated} is given twice`);
  }

  /** Makes stored files a new version, or adds them to `version` when given. */
  async upload(input: { entity: string; project: string; name: string; type: string; version: number | null; files: StoredFile[] }): Promise<ArtifactRecord> {
    const names = input.files.map((file) => file.filename);
    this.checkFileNames(names);
    const files = input.files.map(({ filename, blob }) => ({ name: filename, size: blob.size, sha256: blob.sha256, md5: blob.md5 }));
    const where = { entity: input.entity, project: input.project, name: input.name };
    if (input.version === null) return this.insertVersion({ ...where, type: input.type, files });
    // Compare and set on the revision: concurrent adds of one name cannot both pass the check.
    for (;;) {
      const target = await this.artifacts.findOne({ ...where, version: input.version });
      if (!target) throw notFound(`artifact ${input.entity}/${input.project}/${input.name}:v${input.version} not found`);
      const clash = target.files.find((file) => names.includes(file.name));
      if (clash) throw conflict(`artifact ${input.name}:v${input.version} already has a file ${clash.name}`);
      const rev = target.rev ?? 0;
      const updated = await this.artifacts.findOneAndUpdate(
        { _id: target._id, ...(target.rev === undefined ? { rev: { $exists: false } } : { rev }) },
        { $set: { files: [...target.files, ...files], rev: rev + 1 } },
        { returnDocument: "after" },
      );
      if (updated) return updated;
    }
  }

  /**
   * Stores a new version of a name from files already in the blob store (the next number).
   * Idempotent by `_id`: when a version with that id exists already (a retried commit), it is the
   * answer. Concurrent inserts of one name retry on the next number until a deadline, then 409.
   */
  async insertVersion(input: NewArtifactVersion): Promise<ArtifactRecord> {
    const where = { entity: input.entity, project: input.project, name: input.name };
    const id = input._id ?? randomUUID();
    const deadline = Date.now() + INSERT_DEADLINE_MS;
    for (let attempt = 0; ; attempt++) {
      const latest = await this.artifacts.findOne(where, { sort: { version: -1 } });
      const record: ArtifactRecord = {
        model_id: null,
        created_at: new Date(),
        ...input,
        aliases: input.aliases?.filter((alias) => alias !== "latest"),
        _id: id,
        version: latest ? latest.version + 1 : 0,
        rev: 0,
      };
      try {
        await this.artifacts.insertOne(record);
        if (record.aliases && record.aliases.length > 0) await this.releaseAliases(record, record.aliases);
        return record;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        const existing = await this.artifacts.findOne({ _id: id });
        if (existing) return existing;
        if (Date.now() > deadline) throw conflict(`artifact ${input.name}: too many versions are being stored at once; retry`);
        // Another upload took this number: the next one, after a short random wait so that many
        // concurrent uploads spread out instead of colliding again.
        await sleep(Math.random() * Math.min(50, 5 * (attempt + 1)));
      }
    }
  }

  /** Which of these blobs an artifact's file is. */
  async referencedBlobs(names: readonly string[]): Promise<Set<string>> {
    const held = new Set<string>();
    const wanted = new Set(names);
    for await (const record of this.artifacts.find({ "files.sha256": { $in: [...names] } }, { projection: { files: 1 } })) {
      for (const file of record.files) if (wanted.has(file.sha256)) held.add(file.sha256);
    }
    return held;
  }

  async migrateLegacyBlobs(copy: CopyLegacyBlob): Promise<number> {
    let changed = 0;
    for await (const record of this.artifacts.find({ "files.blob_id": { $exists: true } })) {
      const files: ArtifactFile[] = [];
      for (const file of record.files) {
        if (!file.blob_id) {
          files.push(file);
          continue;
        }
        const stored = await copy(file.blob_id);
        files.push({ name: file.name, size: file.size, sha256: stored?.sha256 ?? lostLegacyBlob(file.blob_id), md5: file.md5 ?? stored?.md5 });
      }
      await this.artifacts.updateOne({ _id: record._id }, { $set: { files } });
      changed++;
    }
    return changed;
  }

  async find(entity: string, project: string, name: string, version: number | null): Promise<ArtifactRecord | null> {
    return version === null
      ? this.artifacts.findOne({ entity, project, name }, { sort: { version: -1 } })
      : this.artifacts.findOne({ entity, project, name, version });
  }

  async findById(id: string): Promise<ArtifactRecord | null> {
    return this.artifacts.findOne({ _id: id });
  }

  /** The version holding an alias; `latest` is the highest version. */
  async findByAlias(entity: string, project: string, name: string, alias: string): Promise<ArtifactRecord | null> {
    if (alias === "latest") return this.find(entity, project, name, null);
    return this.artifacts.findOne({ entity, project, name, aliases: alias });
  }

  /** The version of a name whose W&B digest is this one (the same content logged again). */
  async findByDigest(entity: string, project: string, name: string, digest: string): Promise<ArtifactRecord | null> {
    return this.artifacts.findOne({ entity, project, name, digest });
  }

  /** Every version of a name, oldest first. */
  async versions(entity: string, project: string, name: string): Promise<ArtifactRecord[]> {
    return this.artifacts.find({ entity, project, name }).sort({ version: 1 }).toArray();
  }

  /** Sets metadata, description and aliases (each when given); an alias moves here from any other version. */
  async update(record: ArtifactRecord, changes: { metadata?: string; description?: string | null; aliases?: string[] }): Promise<ArtifactRecord> {
    const set: Partial<ArtifactRecord> = {};
    if (changes.metadata !== undefined) set.metadata = changes.metadata;
    if (changes.description !== undefined) set.description = changes.description;
    if (changes.aliases !== undefined) set.aliases = [...new Set(changes.aliases.filter((alias) => alias !== "latest"))];
    const updated = await this.artifacts.findOneAndUpdate({ _id: record._id }, { $set: set }, { returnDocument: "after" });
    if (!updated) throw notFound(`artifact ${record.name}:v${record.version} no longer exists`);
    if (set.aliases) await this.releaseAliases(updated, set.aliases);
    return updated;
  }

  /** Removes these aliases from the other versions of the record's name. */
  private async releaseAliases(record: ArtifactRecord, aliases: readonly string[]): Promise<void> {
    const holders = await this.artifacts.find({ entity: record.entity, project: record.project, name: record.name, aliases: { $in: [...aliases] }, _id: { $ne: record._id } }).toArray();
    for (const holder of holders) {
      await this.artifacts.updateOne({ _id: holder._id }, { $set: { aliases: (holder.aliases ?? []).filter((alias) => !aliases.includes(alias)) } });
    }
  }

  async read(record: ArtifactRecord, filename: string): Promise<Buffer | null> {
    const file = record.files.find((f) => f.name === filename);
    return file ? readBlob(this.blobs, file.sha256) : null;
  }

  /** One file of an artifact, streamed (null: no such file, or its blob is lost). */
  async openFile(record: ArtifactRecord, filename: string): Promise<OpenedBlob | null> {
    const file = record.files.find((f) => f.name === filename);
    return file ? this.blobs.open(file.sha256) : null;
  }

  async linkToModel(artifactId: string, modelId: string): Promise<void> {
    await this.artifacts.updateOne({ _id: artifactId, model_id: null }, { $set: { model_id: modelId } });
  }

  /** Deletes a model's linked artifacts (the collector removes their files). */
  async deleteForModel(modelId: string): Promise<number> {
    return (await this.artifacts.deleteMany({ model_id: modelId })).deletedCount;
  }
}

export function artifactUrl(record: Pick<ArtifactRecord, "entity" | "project" | "name" | "version">): string {
  return `wandb-artifact:///${record.entity}/${record.project}/${record.name}:v${record.version}`;
}
