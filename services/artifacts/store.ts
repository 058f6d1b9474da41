// Artifacts: versioned named file sets (SFT data, and whatever the W&B API logs) of an entity and
// project, files in GridFS. Versions are numbered from 0 per (entity, project, name); a unique
// index settles concurrent uploads of one name. W&B's fields (aliases, metadata, digest, each
// file's MD5) are kept for the W&B API (services/wandb); `latest` is never stored: it is the
// highest version.
import { createHash, randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db, type ObjectId } from "mongodb";
import { badRequest, conflict, notFound } from "../core/errors.js";
import type { Blobs } from "../store/index.js";

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
}

export interface ArtifactFile {
  name: string;
  size: number;
  blob_id: ObjectId;
  /** MD5 of the content, base64 (W&B's file digest); absent on files stored before it was kept. */
  md5?: string;
}

export type NewArtifactVersion = Pick<ArtifactRecord, "entity" | "project" | "name" | "type" | "files"> &
  Partial<Pick<ArtifactRecord, "_id" | "aliases" | "metadata" | "description" | "digest" | "run_id">>;

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export class Artifacts {
  private readonly artifacts: Collection<ArtifactRecord>;

  constructor(
    db: Db,
    private readonly blobs: Blobs,
  ) {
    this.artifacts = db.collection<ArtifactRecord>("artifacts");
  }

  async ensureIndexes(): Promise<void> {
    await this.artifacts.createIndex({ entity: 1, project: 1, name: 1, version: 1 }, { unique: true });
    await this.artifacts.createIndex({ model_id: 1 });
  }

  /** Stores files as a new version, or adds them to `version` when given. */
  async upload(input: { entity: string; project: string; name: string; type: string; version: number | null; files: { filename: string; content: Uint8Array }[] }): Promise<ArtifactRecord> {
    const names = input.files.map((file) => file.filename);
    for (const name of names) if (!FILE_NAME.test(name)) throw badRequest(`filename "${name}" must be a plain file name`);
    const repeated = names.find((name, index) => names.indexOf(name) !== index);
    if (repeated) throw badRequest(`the file ${repeated} is given twice`);
    const where = { entity: input.entity, project: input.project, name: input.name };
    if (input.version !== null) {
      // Check first so a refused upload writes no blob; the update below settles races.
      const target = await this.artifacts.findOne({ ...where, version: input.version });
      if (!target) throw notFound(`artifact ${input.entity}/${input.project}/${input.name}:v${input.version} not found`);
      const clash = target.files.find((file) => names.includes(file.name));
      if (clash) throw conflict(`artifact ${input.name}:v${input.version} already has a file ${clash.name}`);
    }
    const files = await this.putFiles(input);
    if (input.version !== null) {
      const updated = await this.artifacts.findOneAndUpdate(
        { ...where, version: input.version, "files.name": { $nin: names } },
        { $push: { files: { $each: files } } },
        { returnDocument: "after" },
      );
      if (!updated) {
        await this.deleteFiles(files);
        throw conflict(`artifact ${input.name}:v${input.version} changed while uploading (a file of the same name was added); nothing was stored`);
      }
      return updated;
    }
    try {
      return await this.insertVersion({ ...where, type: input.type, files });
    } catch (error) {
      await this.deleteFiles(files);
      throw error;
    }
  }

  /** Stores a new version of a name from files already in the blob store (the next number). */
  async insertVersion(input: NewArtifactVersion): Promise<ArtifactRecord> {
    const where = { entity: input.entity, project: input.project, name: input.name };
    for (let attempt = 0; ; attempt++) {
      const latest = await this.artifacts.findOne(where, { sort: { version: -1 } });
      const record: ArtifactRecord = {
        model_id: null,
        created_at: new Date(),
        ...input,
        aliases: input.aliases?.filter((alias) => alias !== "latest"),
        _id: input._id ?? randomUUID(),
        version: latest ? latest.version + 1 : 0,
      };
      try {
        await this.artifacts.insertOne(record);
        if (record.aliases && record.aliases.length > 0) await this.releaseAliases(record, record.aliases);
        return record;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000) || attempt >= 5 || (await this.artifacts.findOne({ _id: record._id }))) throw error;
      }
    }
  }

  private async putFiles(input: { entity: string; project: string; name: string; files: { filename: string; content: Uint8Array }[] }): Promise<ArtifactRecord["files"]> {
    const stored: ArtifactRecord["files"] = [];
    try {
      for (const file of input.files) {
        const blobId = await this.blobs.put(`${input.name}/${file.filename}`, file.content, { kind: "artifact_file", artifact: `${input.entity}/${input.project}/${input.name}` });
        stored.push({ name: file.filename, size: file.content.byteLength, blob_id: blobId, md5: createHash("md5").update(file.content).digest("base64") });
      }
      return stored;
    } catch (error) {
      await this.deleteFiles(stored);
      throw error;
    }
  }

  private async deleteFiles(files: ArtifactRecord["files"]): Promise<void> {
    for (const file of files) await this.blobs.delete(file.blob_id);
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
    return file ? this.blobs.get(file.blob_id) : null;
  }

  /** One file of an artifact, streamed. */
  async openFile(record: ArtifactRecord, filename: string): Promise<{ size: number; chunks: AsyncIterable<Buffer> } | null> {
    const file = record.files.find((f) => f.name === filename);
    return file ? this.blobs.open(file.blob_id) : null;
  }

  async linkToModel(artifactId: string, modelId: string): Promise<void> {
    await this.artifacts.updateOne({ _id: artifactId, model_id: null }, { $set: { model_id: modelId } });
  }

  /** Deletes a model's linked artifacts with their files. */
  async deleteForModel(modelId: string): Promise<number> {
    const linked = await this.artifacts.find({ model_id: modelId }).toArray();
    for (const artifact of linked) {
      await this.deleteFiles(artifact.files);
      await this.artifacts.deleteOne({ _id: artifact._id });
    }
    return linked.length;
  }
}

export function artifactUrl(record: Pick<ArtifactRecord, "entity" | "project" | "name" | "version">): string {
  return `wandb-artifact:///${record.entity}/${record.project}/${record.name}:v${record.version}`;
}
