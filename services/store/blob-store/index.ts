// The blob store's face: content-addressed large payloads, their collector and the move off GridFS.
export { BlobCollector, type BlobReferences, type CollectionReport } from "./blob-collector.js";
export { BlobDigestMismatch, BlobMissing, type BlobStore, BlobTooLarge, type BlobWriteOptions, isBlobName, type OpenedBlob, readBlob, type StoredBlob } from "./blob-store.js";
export { type CopyLegacyBlob, type LegacyBlobOwner, lostLegacyBlob, migrateLegacyBlobs } from "./legacy-gridfs.js";
export { localBlobStore, openBlobStore } from "./open-blob-store.js";
