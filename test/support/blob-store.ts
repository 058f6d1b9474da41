// The blob store of the shared test server (global-setup.ts), for tests that write records the way
// the trainer does (checkpoints with adapters) or check what a delete left behind.
import { inject } from "vitest";
import { type BlobStore, localBlobStore } from "../../services/store/index.js";

export function sharedBlobStore(): BlobStore {
  return localBlobStore(inject("dataDir"));
}
