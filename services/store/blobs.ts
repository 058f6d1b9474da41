// Large payloads (adapters, trajectory batches, uploaded data) live in GridFS, tagged with the
// model they belong to so that deleting a model can find every one of them.
//
// Time bounds: every database operation has the client's timeout (DATABASE_TIMEOUT_MS), but a
// GridFS stream is many operations: an upload gets that bound plus time for its size, and a read
// is bounded per batch of chunks, so a download that a slow client takes minutes to read works.
import { Binary, CursorTimeoutMode, GridFSBucket, type Db, type GridFSFile, type ObjectId } from "mongodb";

/** Bytes per second an upload is given at least (the embedded FerretDB writes about 30 MB/s). */
const UPLOAD_BYTES_PER_SECOND = 4 * 2 ** 20;

export interface BlobMetadata {
  model_id?: string;
  kind: string;
  [key: string]: unknown;
}

export class Blobs {
  private readonly bucket: GridFSBucket;
  private readonly db: Db;

  /** bucketName: a GridFS bucket of its own (its `.files` and `.chunks` collections). */
  constructor(
    db: Db,
    private readonly bucketName = "blobs",
  ) {
    this.db = db;
    this.bucket = new GridFSBucket(db, { bucketName });
  }

  async ensureIndexes(): Promise<void> {
    await this.db.collection(`${this.bucketName}.files`).createIndex({ "metadata.model_id": 1 });
  }

  async put(filename: string, data: Uint8Array, metadata: BlobMetadata): Promise<ObjectId> {
    const timeoutMS = (this.db.timeoutMS ?? 10_000) + Math.ceil((data.byteLength / UPLOAD_BYTES_PER_SECOND) * 1000);
    const upload = this.bucket.openUploadStream(filename, { metadata, timeoutMS });
    await new Promise<void>((resolve, reject) => {
      upload.once("finish", () => resolve());
      upload.once("error", reject);
      upload.end(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    });
    return upload.id;
  }

  async get(id: ObjectId): Promise<Buffer> {
    const file = await this.bucket.find({ _id: id }).next();
    if (!file) throw new Error(`blob ${id.toHexString()} not found`);
    const chunks: Buffer[] = [];
    for await (const chunk of this.chunksOf(file)) chunks.push(chunk);
    return Buffer.concat(chunks);
  }

  /** A stored file's size and its bytes as they come from GridFS (chunk by chunk). */
  async open(id: ObjectId): Promise<{ size: number; chunks: AsyncIterable<Buffer> } | null> {
    const file = await this.bucket.find({ _id: id }).next();
    if (!file) return null;
    return { size: file.length, chunks: this.chunksOf(file) };
  }

  /**
   * A file's chunks in order, each batch read within the operation timeout (not the whole file:
   * the driver's download stream bounds its whole life by it). Checks what GridFS readers check:
   * no chunk missing, none too many, the length adding up.
   */
  private async *chunksOf(file: GridFSFile): AsyncGenerator<Buffer> {
    const cursor = this.db
      .collection<{ files_id: ObjectId; n: number; data: Binary | Uint8Array }>(`${this.bucketName}.chunks`)
      .find({ files_id: file._id }, { sort: { n: 1 }, timeoutMode: CursorTimeoutMode.ITERATION });
    let expected = 0;
    let bytes = 0;
    try {
      for await (const chunk of cursor) {
        if (chunk.n !== expected) throw new Error(`blob ${String(file._id)}: chunk ${expected} is missing`);
        const raw = chunk.data instanceof Binary ? chunk.data.buffer.subarray(0, chunk.data.position) : chunk.data;
        const data = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
        bytes += data.byteLength;
        expected++;
        yield data;
      }
    } finally {
      await cursor.close();
    }
    if (bytes !== file.length) throw new Error(`blob ${String(file._id)}: ${bytes} bytes stored of ${file.length}`);
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
    return this.db.collection(`${this.bucketName}.files`).countDocuments({ "metadata.model_id": modelId });
  }

  async exists(id: ObjectId): Promise<boolean> {
    return (await this.db.collection(`${this.bucketName}.files`).countDocuments({ _id: id }, { limit: 1 })) > 0;
  }
}
