// The blob suite on the embedded default: blobs as files under DATA_DIR/blobs.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { localBlobStore } from "../../services/store/index.js";
import { describeBlobStore } from "./blob-suite.js";

describeBlobStore("local files", async () => ({
  env: {},
  open: (dataDir) => localBlobStore(dataDir),
  leftovers: async (_store, dataDir) => (await readdir(join(dataDir, "blobs", "tmp")).catch(() => [])).length,
  stop: async () => {},
}));
