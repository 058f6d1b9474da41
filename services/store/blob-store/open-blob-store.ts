// The process's blob store from its configuration: BLOB_STORE_URL names an S3-compatible bucket
// (s3-blob-store.ts); unset, blobs are files under DATA_DIR/blobs.
import { join } from "node:path";
import type { BlobStore } from "./blob-store.js";
import { LocalBlobStore } from "./local-blob-store.js";

/** The files under DATA_DIR/blobs (the default, BLOB_STORE_URL unset). */
export function localBlobStore(dataDir: string): BlobStore {
  return new LocalBlobStore(join(dataDir, "blobs"));
}

export async function openBlobStore(settings: { blobStoreUrl: string; dataDir: string }): Promise<BlobStore> {
  if (settings.blobStoreUrl === "") return localBlobStore(settings.dataDir);
  if (settings.blobStoreUrl.startsWith("file://")) return new LocalBlobStore(new URL(settings.blobStoreUrl).pathname);
  if (settings.blobStoreUrl.startsWith("s3://")) {
    // The AWS SDK takes about 0.4 s to load: only processes that use it pay for it.
    const { S3BlobStore, s3OptionsFromUrl } = await import("./s3-blob-store.js");
    return new S3BlobStore(s3OptionsFromUrl(settings.blobStoreUrl));
  }
  throw new Error(`BLOB_STORE_URL must be s3://bucket[/prefix]?endpoint=... or file:///path, not ${settings.blobStoreUrl}`);
}
