// Large payloads (datasets, adapters, trajectory batches) are files in a blob store, named by the
// SHA-256 of their bytes; the database holds only metadata and these names. Two stores implement
// this: files under DATA_DIR (the embedded default) and any S3-compatible object store
// (BLOB_STORE_URL). Writing streams into a temporary object, checks size and digests, and only
// then makes the blob visible under its hash, so a failed or aborted write leaves nothing behind;
// identical content is stored once. Blobs are never deleted by the code that stops using them:
// the collector (blob-collector.ts) removes what no record names after a grace period, which is
// what makes concurrent writes of the same content and crashes between a write and its record safe.
import { Readable } from "node:stream";
import { ApiError } from "../../core/errors.js";

/** A stored blob: its name (SHA-256, hex), size and MD5 (base64: W&B's file digest). */
export interface StoredBlob {
  sha256: string;
  size: number;
  md5: string;
}

export interface BlobWriteOptions {
  /** More bytes than this: the write fails with BlobTooLarge and nothing is kept. */
  maxBytes: number;
  /** The MD5 (base64) the content must have, else BlobDigestMismatch and nothing is kept. */
  md5?: string;
  /** The size the content must have, else BlobDigestMismatch and nothing is kept. */
  size?: number;
  /** Aborting stops the write; nothing is kept. */
  signal?: AbortSignal;
}

/** A blob as the store lists it, for the collector. */
export interface ListedBlob {
  sha256: string;
  size: number;
  /** When it was last written (a write of content already stored renews it). */
  modifiedAt: Date;
}

export interface OpenedBlob {
  size: number;
  /** The bytes, checked against the blob's name as they go: a mismatch ends the stream with an error. */
  stream: Readable;
}

export interface BlobStore {
  /** What it is, for logs and the README ("local /path", "s3://bucket/prefix"). */
  readonly description: string;
  /** Streams content into the store; resolves once it is stored under its hash. */
  write(content: AsyncIterable<Uint8Array> | Uint8Array, options: BlobWriteOptions): Promise<StoredBlob>;
  /** A blob's bytes, or null when there is no such blob. */
  open(sha256: string): Promise<OpenedBlob | null>;
  /** Whether the blob exists and its size. */
  stat(sha256: string): Promise<ListedBlob | null>;
  /** Removes a blob when it was last written before `notAfter` (none written since the caller decided). */
  deleteIfOlder(sha256: string, notAfter: Date): Promise<boolean>;
  /** Every stored blob. */
  list(): AsyncIterable<ListedBlob>;
  /** Removes what interrupted writes left (a process killed mid-upload) older than `before`; how many. */
  sweepTemporary(before: Date): Promise<number>;
  close(): Promise<void>;
}

export class BlobTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the content is larger than ${limit} bytes`);
    this.name = "BlobTooLarge";
  }
}

/** The content is not what its sender announced (size or MD5): the sender's error, a 400. */
export class BlobDigestMismatch extends ApiError {
  constructor(message: string) {
    super("bad_request", message);
    this.name = "BlobDigestMismatch";
  }
}

/** A record names a blob the store does not have (lost, or processes sharing a database but not a blob store). */
export class BlobMissing extends Error {
  constructor(
    readonly sha256: string,
    where: string,
  ) {
    super(`blob ${sha256} is missing from the blob store (${where}); every server and worker on one database must use the same blob store (BLOB_STORE_URL)`);
    this.name = "BlobMissing";
  }
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** A blob name as the stores accept it (anything else could name a path outside the store). */
export function isBlobName(value: string): boolean {
  return SHA256_HEX.test(value);
}

/** A whole blob in memory (adapters a job continues from, a trajectory batch): throws BlobMissing. */
export async function readBlob(store: BlobStore, sha256: string): Promise<Buffer> {
  const opened = await store.open(sha256);
  if (!opened) throw new BlobMissing(sha256, store.description);
  const chunks: Buffer[] = [];
  for await (const chunk of opened.stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Content given whole or as a stream, as a stream. */
export function contentStream(content: AsyncIterable<Uint8Array> | Uint8Array): AsyncIterable<Uint8Array> {
  if (!(content instanceof Uint8Array)) return content;
  // Large buffers in bounded pieces, so hashing and writing interleave.
  return Readable.from(
    (function* () {
      const piece = 1 << 20;
      for (let offset = 0; offset < content.byteLength; offset += piece) yield content.subarray(offset, Math.min(offset + piece, content.byteLength));
    })(),
  );
}
