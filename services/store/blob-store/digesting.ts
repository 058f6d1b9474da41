// Hashes content as it passes (SHA-256 names the blob, MD5 is W&B's file digest) and stops it at a
// size limit, for both blob stores; and checks a stored blob's bytes against its name on the way out.
import { createHash, type Hash } from "node:crypto";
import { type Readable, Transform, type TransformCallback } from "node:stream";
import { BlobDigestMismatch, BlobTooLarge, type BlobWriteOptions, type StoredBlob } from "./blob-store.js";

export class DigestingStream extends Transform {
  private readonly sha256: Hash = createHash("sha256");
  private readonly md5: Hash = createHash("md5");
  private bytes = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.byteLength;
    if (this.bytes > this.maxBytes) {
      done(new BlobTooLarge(this.maxBytes));
      return;
    }
    this.sha256.update(chunk);
    this.md5.update(chunk);
    done(null, chunk);
  }

  /** The digests of everything that passed; call once the stream has ended. */
  result(): StoredBlob {
    return { sha256: this.sha256.digest("hex"), size: this.bytes, md5: this.md5.digest("base64") };
  }
}

/** Throws BlobDigestMismatch when the content is not what the writer announced. */
export function checkExpected(blob: StoredBlob, options: BlobWriteOptions): void {
  if (options.size !== undefined && blob.size !== options.size) throw new BlobDigestMismatch(`the content has ${blob.size} bytes, not the ${options.size} announced`);
  if (options.md5 !== undefined && blob.md5 !== options.md5) throw new BlobDigestMismatch(`the content has MD5 ${blob.md5}, not the ${options.md5} announced`);
}

/** Passes a stored blob's bytes on and fails at the end when they are not the blob's name or size. */
export class VerifyingStream extends Transform {
  private readonly hash: Hash = createHash("sha256");
  private bytes = 0;

  constructor(
    private readonly sha256: string,
    private readonly size: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.byteLength;
    this.hash.update(chunk);
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    const actual = this.hash.digest("hex");
    if (this.bytes !== this.size || actual !== this.sha256) done(new Error(`blob ${this.sha256} is damaged in the blob store: ${this.bytes} bytes hashing to ${actual}`));
    else done();
  }
}

/** A stored blob's bytes as read from the store, checked on the way out (each store's `open`). */
export function verified(source: Readable, sha256: string, size: number): Readable {
  const verifying = new VerifyingStream(sha256, size);
  source.once("error", (error) => verifying.destroy(error));
  verifying.once("close", () => source.destroy());
  return source.pipe(verifying);
}
