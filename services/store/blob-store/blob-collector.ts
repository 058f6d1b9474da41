// Removes blobs no record names any more, and what interrupted uploads left behind. Code that stops
// using a blob never deletes it itself: the same content may be named by another record, or be
// about to be (a concurrent upload of identical bytes finds the blob already stored). Instead a
// blob is removed once no record names it and it was last written more than a grace period ago; a
// writer renews that time on every write of the content, and names it in a record within the
// grace period. Each service answers which of a batch of names its records hold.
import type { Logger } from "../../core/logger.js";
import type { BlobStore, ListedBlob } from "./blob-store.js";

/** A service's records that name blobs. */
export interface BlobReferences {
  /** Which of these blob names some record of this service names. */
  referencedBlobs(names: readonly string[]): Promise<Set<string>>;
}

export interface CollectionReport {
  scanned: number;
  deleted: number;
  bytesFreed: number;
  temporaryRemoved: number;
}

const BATCH = 200;

export class BlobCollector {
  private running: Promise<CollectionReport> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: BlobStore,
    private readonly references: readonly BlobReferences[],
    private readonly graceMs: number,
    private readonly log: Logger,
  ) {}

  /** One pass; concurrent calls share it. */
  collect(): Promise<CollectionReport> {
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Runs a pass now and then every `everyMs` (0: never), until stop(). */
  start(everyMs: number): void {
    if (everyMs <= 0) return;
    const run = () => {
      this.collect()
        .then((report) => {
          if (report.deleted > 0 || report.temporaryRemoved > 0) this.log.info("blobs collected", { ...report });
        })
        .catch((error: unknown) => this.log.warn("blob collection failed; retried on the next pass", { error }))
        .finally(() => {
          if (this.timer !== undefined) this.timer = setTimeout(run, everyMs).unref();
        });
    };
    this.timer = setTimeout(run, Math.min(everyMs, 5_000)).unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  private async pass(): Promise<CollectionReport> {
    const cutoff = new Date(Date.now() - this.graceMs);
    const report: CollectionReport = { scanned: 0, deleted: 0, bytesFreed: 0, temporaryRemoved: await this.store.sweepTemporary(cutoff) };
    let batch: ListedBlob[] = [];
    for await (const blob of this.store.list()) {
      report.scanned++;
      if (blob.modifiedAt < cutoff) batch.push(blob);
      if (batch.length >= BATCH) {
        await this.removeUnreferenced(batch, cutoff, report);
        batch = [];
      }
    }
    if (batch.length > 0) await this.removeUnreferenced(batch, cutoff, report);
    return report;
  }

  private async removeUnreferenced(candidates: ListedBlob[], cutoff: Date, report: CollectionReport): Promise<void> {
    const names = candidates.map((blob) => blob.sha256);
    const held = new Set<string>();
    for (const owner of this.references) for (const name of await owner.referencedBlobs(names)) held.add(name);
    for (const blob of candidates) {
      // Checked again at deletion: a write of the same content since the listing renewed it.
      if (held.has(blob.sha256) || !(await this.store.deleteIfOlder(blob.sha256, cutoff))) continue;
      report.deleted++;
      report.bytesFreed += blob.size;
    }
  }
}
