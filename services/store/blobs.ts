// Large payloads (adapters, trajectory batches, uploaded data) live in GridFS, tagged with the
// model they belong to so that deleting a model can find every one of them.
import { GridFSBucket, type Db, type ObjectId } from "mongodb";

export interface BlobMetadata {
  model_id?: string;
  kind: string;
  [key: string]: unknown;
}

export class Blobs {
  private readonly bucket: GridFSBucket;
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
    this.bucket = new GridFSBucket(db, { bucketName: "blobs" });
  }

  async ensureIndexes(): Promise<void> {
    await this.db.collection("blobs.files").createIndex({ "metadata.model_id": 1 });
  }

  async put(filename: string, data: Uint8Array, metadata: BlobMetadata): Promise<ObjectId> {
    const upload = this.bucket.openUploadStream(filename, { metadata });
    await new Promise<void>((resolve, reject) => {
      upload.once("finish", () => resolve());
      upload.once("error", reject);
      upload.end(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    });
    return upload.id;
  }

  async get(id: ObjectId): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.bucket.openDownloadStream(id)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  /** A stored file's size and its bytes as they come from GridFS (chunk by chunk). */
  async open(id: ObjectId): Promise<{ size: number; chunks: AsyncIterable<Buffer> } | null> {
    const file = await this.bucket.find({ _id: id }).next();
    if (!file) return null;
    return { size: file.length, chunks: this.bucket.openDownloadStream(id) as AsyncIterable<Buffer> };
  }

  async delete(id: ObjectId): Promise<void> {
    await this.bucket.delete(id).catch((error: unknown) => {
      // Already gone is fine: deletes are retried after partial failures.
      if (!(error instanceof Error && /not found|FileNotFound/i.test(error.message))) throw error;
    });
  }

  async deleteForModel(modelId: string): Promise<number> {
    const files = await this.bucket.find({ "metadata.model_id": modelId }).toArray();
    for (const file of files) await this.delete(file._id);
    return files.length;
  }

  async countForModel(modelId: string): Promise<number> {
    return this.db.collection("blobs.files").countDocuments({ "metadata.model_id": modelId });
  }
}
