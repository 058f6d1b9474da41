// The embedded default: blobs as files under DATA_DIR/blobs, `sha256/ab/<hash>`. A write goes to
// `tmp/<random>` (hashed on the way, synced to disk) and is renamed to its hash once checked, so a
// blob is either whole under its name or absent; reads open one file by name, whatever else is stored.
import { randomUUID } from "node:crypto";
import { createWriteStream, mkdirSync } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { contentStream, isBlobName, type BlobStore, type BlobWriteOptions, type ListedBlob, type OpenedBlob, type StoredBlob } from "./blob-store.js";
import { checkExpected, DigestingStream, verified } from "./digesting.js";

export class LocalBlobStore implements BlobStore {
  readonly description: string;
  private readonly blobsDir: string;
  private readonly temporaryDir: string;

  constructor(private readonly root: string) {
    this.description = `local ${root}`;
    this.blobsDir = join(root, "sha256");
    this.temporaryDir = join(root, "tmp");
    mkdirSync(this.temporaryDir, { recursive: true });
  }

  async write(content: AsyncIterable<Uint8Array> | Uint8Array, options: BlobWriteOptions): Promise<StoredBlob> {
    // Nothing awaited before the pipeline takes the content: a stream that fails meanwhile would
    // have no one listening for its error.
    const temporary = join(this.temporaryDir, randomUUID());
    const digesting = new DigestingStream(options.maxBytes);
    try {
      const file = createWriteStream(temporary, { flags: "wx" });
      await pipeline(contentStream(content), digesting, file, options.signal ? { signal: options.signal } : {});
      const blob = digesting.result();
      checkExpected(blob, options);
      await syncFile(temporary);
      const target = this.path(blob.sha256);
      await mkdir(join(target, ".."), { recursive: true });
      // Replacing a blob already there with the same bytes is harmless, and renews its time, which
      // keeps it from a collector deciding about it right now.
      await rename(temporary, target);
      return blob;
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }

  async open(sha256: string): Promise<OpenedBlob | null> {
    if (!isBlobName(sha256)) return null;
    const handle = await open(this.path(sha256), "r").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return null;
      throw error;
    });
    if (!handle) return null;
    try {
      // The open file stays readable even when the collector unlinks it meanwhile.
      const { size } = await handle.stat();
      return { size, stream: verified(handle.createReadStream({ highWaterMark: 1 << 20 }), sha256, size) };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async stat(sha256: string): Promise<ListedBlob | null> {
    if (!isBlobName(sha256)) return null;
    const info = await stat(this.path(sha256)).catch(() => null);
    return info ? { sha256, size: info.size, modifiedAt: info.mtime } : null;
  }

  async deleteIfOlder(sha256: string, notAfter: Date): Promise<boolean> {
    const info = await this.stat(sha256);
    if (!info || info.modifiedAt >= notAfter) return false;
    await unlink(this.path(sha256)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOENT") throw error;
    });
    return true;
  }

  async *list(): AsyncIterable<ListedBlob> {
    for (const shard of await readdir(this.blobsDir).catch(() => [] as string[])) {
      for (const name of await readdir(join(this.blobsDir, shard)).catch(() => [] as string[])) {
        if (!isBlobName(name)) continue;
        const info = await this.stat(name);
        if (info) yield info;
      }
    }
  }

  async sweepTemporary(before: Date): Promise<number> {
    let removed = 0;
    for (const name of await readdir(this.temporaryDir).catch(() => [] as string[])) {
      const path = join(this.temporaryDir, name);
      const info = await stat(path).catch(() => null);
      if (info && info.mtime < before) {
        await rm(path, { force: true });
        removed++;
      }
    }
    return removed;
  }

  async close(): Promise<void> {}

  private path(sha256: string): string {
    return join(this.blobsDir, sha256.slice(0, 2), sha256);
  }
}

/** Flushes a written file to disk, so a blob that is named survives a machine crash. */
async function syncFile(path: string): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
