// Before the blob store, large payloads lived in GridFS buckets of the database (`blobs`, and
// `adapters` for checkpoints' adapters), named in records by ObjectId. At start-up every record
// still naming a GridFS file gets the file copied into the blob store and names its hash instead
// (each service migrates its own records); once none is left, the GridFS collections are dropped,
// which also removes the chunks failed uploads left behind (nothing ever collected those).
import { Binary, CursorTimeoutMode, type Db, type ObjectId } from "mongodb";
import type { Logger } from "../../core/logger.js";
import { BlobDigestMismatch, type BlobStore, BlobTooLarge, type StoredBlob } from "./blob-store.js";

class LegacyBlobDamaged extends Error {}

/** Copies one GridFS file into the blob store: its StoredBlob, or null when the file is gone. */
export type CopyLegacyBlob = (id: ObjectId) => Promise<StoredBlob | null>;

/** A service whose records may still name GridFS files. */
export interface LegacyBlobOwner {
  /** Moves every such record onto the blob store; how many records it changed. */
  migrateLegacyBlobs(copy: CopyLegacyBlob): Promise<number>;
}

/** What a record names when its GridFS file had been lost already: no blob has this name. */
export function lostLegacyBlob(id: ObjectId): string {
  return `lost-gridfs-${id.toHexString()}`;
}

const BUCKETS = ["blobs", "adapters"];

export async function migrateLegacyBlobs(db: Db, store: BlobStore, owners: readonly LegacyBlobOwner[], log: Logger): Promise<void> {
  const present = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  const buckets = BUCKETS.filter((bucket) => present.has(`${bucket}.files`) || present.has(`${bucket}.chunks`));
  if (buckets.length === 0) return;
  log.info("moving GridFS blobs into the blob store", { buckets, store: store.description });
  const started = performance.now();
  let copied = 0;
  const copy: CopyLegacyBlob = async (id) => {
    for (const bucket of buckets) {
      const file = await db.collection<{ _id: ObjectId; length: number }>(`${bucket}.files`).findOne({ _id: id });
      if (!file) continue;
      let stored: StoredBlob;
      try {
        stored = await store.write(chunksOf(db, bucket, file), { maxBytes: file.length, size: file.length });
      } catch (error) {
        // A damaged file is lost for good (its record then names no blob); anything else (the
        // database not answering) fails this start, and the next one carries on.
        if (!(error instanceof LegacyBlobDamaged || error instanceof BlobDigestMismatch || error instanceof BlobTooLarge)) throw error;
        log.warn("a GridFS blob is damaged and cannot be moved; its record now names no blob", { id: id.toHexString(), bucket, error: error.message });
        return null;
      }
      copied++;
      if (copied % 50 === 0) log.info("moving GridFS blobs", { copied });
      return stored;
    }
    return null;
  };
  let records = 0;
  for (const owner of owners) records += await owner.migrateLegacyBlobs(copy);
  for (const bucket of buckets) {
    for (const suffix of ["files", "chunks"]) await db.collection(`${bucket}.${suffix}`).drop().catch(() => undefined);
  }
  log.info("GridFS blobs moved into the blob store; the GridFS collections are dropped", { records, blobs: copied, seconds: Math.round((performance.now() - started) / 100) / 10 });
}

/**
 * A GridFS file's chunks in order, each batch read within the operation timeout. Checks what
 * GridFS readers check: no chunk missing, none too many, the length adding up.
 */
async function* chunksOf(db: Db, bucket: string, file: { _id: ObjectId; length: number }): AsyncGenerator<Uint8Array> {
  const cursor = db
    .collection<{ files_id: ObjectId; n: number; data: Binary | Uint8Array }>(`${bucket}.chunks`)
    .find({ files_id: file._id }, { sort: { n: 1 }, timeoutMode: CursorTimeoutMode.ITERATION });
  let expected = 0;
  let bytes = 0;
  try {
    for await (const chunk of cursor) {
      if (chunk.n !== expected) throw new LegacyBlobDamaged(`GridFS file ${String(file._id)}: chunk ${expected} is missing`);
      const data = chunk.data instanceof Binary ? chunk.data.buffer.subarray(0, chunk.data.position) : chunk.data;
      bytes += data.byteLength;
      expected++;
      yield data;
    }
  } finally {
    await cursor.close();
  }
  if (bytes !== file.length) throw new LegacyBlobDamaged(`GridFS file ${String(file._id)}: ${bytes} bytes stored of ${file.length}`);
}
