// Artifacts: versioned named file sets (SFT data) of an entity and project, files in GridFS.
// Versions are numbered from 0 per (entity, project, name); a unique index settles concurrent
// uploads of one name.
import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db, type ObjectId } from "mongodb";
import { badRequest, notFound } from "../core/errors.js";
import type { Blobs } from "../store/blobs.js";

export interface ArtifactRecord {
  _id: string;
  entity: string;
  project: string;
  name: string;
  version: number;
  type: string;
  files: { name: string; size: number; blob_id: ObjectId }[];
  /** Set when a model's SFT job uses it, so deleting the model deletes it. */
  model_id: string | null;
  created_at: Date;
}

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

  /** Stores a file as a new version, or adds it to `version` when given. */
  async upload(input: { entity: string; project: string; name: string; type: string; filename: string; version: number | null; content: Uint8Array }): Promise<ArtifactRecord> {
    if (!FILE_NAME.test(input.filename)) throw badRequest(`filename "${input.filename}" must be a plain file name`);
    const blobId = await this.blobs.put(`${input.name}/${input.filename}`, input.content, { kind: "artifact_file", artifact: `${input.entity}/${input.project}/${input.name}` });
    const file = { name: input.filename, size: input.content.byteLength, blob_id: blobId };
    if (input.version !== null) {
      const existing = await this.artifacts.findOneAndUpdate(
        { entity: input.entity, project: input.project, name: input.name, version: input.version },
        { $push: { files: file } },
        { returnDocument: "after" },
      );
      if (!existing) {
        await this.blobs.delete(blobId);
        throw notFound(`artifact ${input.entity}/${input.project}/${input.name}:v${input.version} not found`);
      }
      return existing;
    }
    for (let attempt = 0; ; attempt++) {
      const latest = await this.artifacts.findOne({ entity: input.entity, project: input.project, name: input.name }, { sort: { version: -1 } });
      const record: ArtifactRecord = {
        _id: randomUUID(),
        entity: input.entity,
        project: input.project,
        name: input.name,
        version: latest ? latest.version + 1 : 0,
        type: input.type,
        files: [file],
        model_id: null,
        created_at: new Date(),
      };
      try {
        await this.artifacts.insertOne(record);
        return record;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000) || attempt >= 5) throw error;
      }
    }
  }

  async find(entity: string, project: string, name: string, version: number | null): Promise<ArtifactRecord | null> {
    return version === null
      ? this.artifacts.findOne({ entity, project, name }, { sort: { version: -1 } })
      : this.artifacts.findOne({ entity, project, name, version });
  }

  async read(record: ArtifactRecord, filename: string): Promise<Buffer | null> {
    const file = record.files.find((f) => f.name === filename);
    return file ? this.blobs.get(file.blob_id) : null;
  }

  async linkToModel(artifactId: string, modelId: string): Promise<void> {
    await this.artifacts.updateOne({ _id: artifactId, model_id: null }, { $set: { model_id: modelId } });
  }

  /** Deletes a model's linked artifacts with their files. */
  async deleteForModel(modelId: string): Promise<number> {
    const linked = await this.artifacts.find({ model_id: modelId }).toArray();
    for (const artifact of linked) {
      for (const file of artifact.files) await this.blobs.delete(file.blob_id);
      await this.artifacts.deleteOne({ _id: artifact._id });
    }
    return linked.length;
  }
}

export function artifactUrl(record: Pick<ArtifactRecord, "entity" | "project" | "name" | "version">): string {
  return `wandb-artifact:///${record.entity}/${record.project}/${record.name}:v${record.version}`;
}
