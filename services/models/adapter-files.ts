// Checkpoint adapters as local files under DATA_DIR/adapters: the GGUF that llama.cpp loads by
// path, and the whole adapter (GGUF and PEFT files) a training job continues from. The blob store
// stays the source of truth; these are a cache, written when a checkpoint is made here and
// otherwise on first use.
//
// Why a cache: the blob store may be remote (S3), and every job and every newly served checkpoint
// would read its adapter again; llama.cpp needs a path.
//
// Files are named by the GGUF's blob (its content hash), not the checkpoint id: a checkpoint id is
// derived from (model, step), and a deleted step is made again by the next job with another
// adapter. llama.cpp also caches adapters by path, so a new adapter must be a new path.
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { GGUF_ADAPTER_FILE, type AdapterBytes, type CheckpointRecord, type Checkpoints } from "./checkpoints.js";

export class AdapterFiles {
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly dataDir: string,
    private readonly checkpoints: Checkpoints,
  ) {}

  /** The checkpoint's GGUF adapter as a file (null at step 0, the base model itself). */
  async ggufPath(checkpoint: CheckpointRecord): Promise<string | null> {
    const blob = checkpoint.adapter_sha256;
    if (!blob) return null;
    const path = this.path(blob, GGUF_ADAPTER_FILE);
    if (await exists(path)) return path;
    await this.once(path, async () => {
      const data = await this.checkpoints.readAdapterFile(checkpoint);
      if (!data) throw new Error(`checkpoint ${checkpoint._id} lost its adapter`);
      await writeAtomically(path, data);
    });
    return path;
  }

  /**
   * The checkpoint's GGUF path with every file of the adapter (its PEFT files too) in the same
   * directory, for engines that read the PEFT form (vLLM); null at step 0.
   */
  async wholePath(checkpoint: CheckpointRecord): Promise<string | null> {
    const blob = checkpoint.adapter_sha256;
    if (!blob) return null;
    const names = [GGUF_ADAPTER_FILE, ...(checkpoint.peft_files ?? []).map((f) => f.name)];
    const present = await Promise.all(names.map((name) => exists(this.path(blob, name))));
    if (!present.every(Boolean)) await this.read(checkpoint);
    return this.ggufPath(checkpoint);
  }

  /** The checkpoint's whole adapter (null at step 0), from the cache or else the database. */
  async read(checkpoint: CheckpointRecord): Promise<AdapterBytes | null> {
    const blob = checkpoint.adapter_sha256;
    if (!blob) return null;
    const dir = this.dir(blob);
    const peftNames = (checkpoint.peft_files ?? []).map((f) => f.name);
    const cached = await Promise.all([GGUF_ADAPTER_FILE, ...peftNames].map((name) => readFile(join(dir, name)).catch(() => null)));
    if (cached.every((file) => file !== null)) {
      const [gguf, ...peft] = cached as Buffer[];
      return { gguf: gguf!, peft: peftNames.length ? Object.fromEntries(peftNames.map((name, i) => [name, peft[i]!])) : null };
    }
    const adapter = await this.checkpoints.readAdapter(checkpoint);
    if (adapter) await this.remember(checkpoint, adapter);
    return adapter;
  }

  /** Caches a checkpoint's adapter just written (or just read), so nothing reads it back. */
  async remember(checkpoint: CheckpointRecord, adapter: AdapterBytes): Promise<void> {
    const blob = checkpoint.adapter_sha256;
    if (!blob) return;
    const files: [string, Uint8Array][] = [[GGUF_ADAPTER_FILE, adapter.gguf], ...Object.entries(adapter.peft ?? {})];
    await Promise.all(
      files.map(([name, data]) => {
        const path = this.path(blob, name);
        return this.once(path, () => writeAtomically(path, data));
      }),
    );
  }

  private dir(blobName: string): string {
    return join(this.dataDir, "adapters", blobName);
  }

  private path(blobName: string, name: string): string {
    return join(this.dir(blobName), name);
  }

  /** One write per path at a time (concurrent requests for a new checkpoint share it). */
  private once(path: string, write: () => Promise<void>): Promise<void> {
    let pending = this.writing.get(path);
    if (!pending) {
      pending = (async () => {
        if (!(await exists(path))) await write();
      })().finally(() => this.writing.delete(path));
      this.writing.set(path, pending);
    }
    return pending;
  }
}

async function writeAtomically(path: string, data: Uint8Array): Promise<void> {
  await mkdir(join(path, ".."), { recursive: true });
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(temporary, data);
  await rename(temporary, path);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
