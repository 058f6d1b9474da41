// Checkpoint adapters as files for llama.cpp: written once from GridFS to DATA_DIR/adapters, one
// file per checkpoint id (llama.cpp caches adapters by path, so a new checkpoint is a new path).
import { mkdir, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ObjectId } from "mongodb";
import type { Blobs } from "../store/blobs.js";

export class AdapterFiles {
  private readonly writing = new Map<string, Promise<string>>();

  constructor(
    private readonly dataDir: string,
    private readonly blobs: Blobs,
  ) {}

  async pathFor(checkpointId: string, blobId: ObjectId): Promise<string> {
    const path = join(this.dataDir, "adapters", `${checkpointId}.gguf`);
    if (await exists(path)) return path;
    let pending = this.writing.get(path);
    if (!pending) {
      pending = (async () => {
        await mkdir(join(this.dataDir, "adapters"), { recursive: true });
        const temporary = `${path}.${process.pid}.tmp`;
        await writeFile(temporary, await this.blobs.get(blobId));
        await rename(temporary, path);
        return path;
      })().finally(() => this.writing.delete(path));
      this.writing.set(path, pending);
    }
    return pending;
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
