// Logged trajectory groups, stored exactly as the client sent them (JSON text, so any keys survive),
// tagged with model, split and the step they were logged at. Groups too large for a document are
// blobs.
import { randomUUID } from "node:crypto";
import type { Collection, Db, ObjectId } from "mongodb";
import type { JsonObject } from "@bufbuild/protobuf";
import { type BlobReferences, type BlobStore, type CopyLegacyBlob, type LegacyBlobOwner, lostLegacyBlob, readBlob } from "../store/index.js";

export interface LoggedGroupRecord {
  _id: string;
  model_id: string;
  split: string;
  step: number;
  batch_id: string;
  index: number;
  group_json: string | null;
  /** A group too large for a document: its blob. */
  blob_sha256: string | null;
  /** Before the blob store: its GridFS file (moved at start-up). */
  blob_id?: ObjectId | null;
  created_at: Date;
}

/** A stored group, sized before it is parsed (a page of groups is bounded by bytes). */
export interface SizedGroup {
  index: number;
  bytes: number;
  group: () => JsonObject;
}

// Well under MongoDB's 16 MB document limit, leaving room for the other fields.
const INLINE_LIMIT = 8 * 1024 * 1024;

export class TrajectoryLog implements BlobReferences, LegacyBlobOwner {
  private readonly groups: Collection<LoggedGroupRecord>;

  constructor(
    db: Db,
    private readonly blobs: BlobStore,
  ) {
    this.groups = db.collection<LoggedGroupRecord>("trajectories");
  }

  async ensureIndexes(): Promise<void> {
    await this.groups.createIndex({ model_id: 1, split: 1, step: 1 });
    // A batch's first group stands for the batch in listings; groups are read by position.
    await this.groups.createIndex({ model_id: 1, index: 1, created_at: -1 });
    await this.groups.createIndex({ batch_id: 1, index: 1 });
    await this.groups.createIndex({ blob_sha256: 1 });
  }

  /** One record per stored batch (its first group, without the group itself), newest first. */
  async batchesOf(modelId: string, split?: string): Promise<Omit<LoggedGroupRecord, "group_json">[]> {
    return this.groups
      .find({ model_id: modelId, index: 0, ...(split === undefined ? {} : { split }) }, { projection: { group_json: 0 } })
      .sort({ created_at: -1, _id: -1 })
      .toArray();
  }

  async countOfBatch(batchId: string): Promise<number> {
    return this.groups.countDocuments({ batch_id: batchId });
  }

  async hasBatch(modelId: string, batchId: string): Promise<boolean> {
    return (await this.groups.countDocuments({ model_id: modelId, batch_id: batchId }, { limit: 1 })) > 0;
  }

  /** Up to `count` of a batch's groups from position `from` on, in order (large ones read back from the blob store). */
  async *groupsFrom(batchId: string, from: number, count: number): AsyncGenerator<SizedGroup> {
    // Small driver batches: inline groups can be megabytes each. Leaving the loop early closes the cursor.
    const cursor = this.groups.find({ batch_id: batchId, index: { $gte: from } }).sort({ index: 1 }).limit(count).batchSize(16);
    for await (const record of cursor) {
      const json = record.group_json ?? (record.blob_sha256 ? (await readBlob(this.blobs, record.blob_sha256)).toString("utf8") : "{}");
      yield { index: record.index, bytes: json.length, group: () => JSON.parse(json) as JsonObject };
    }
  }

  async store(modelId: string, split: string, step: number, groups: JsonObject[]): Promise<string> {
    const batchId = randomUUID();
    const created_at = new Date();
    const records: LoggedGroupRecord[] = [];
    for (const [index, group] of groups.entries()) {
      const json = JSON.stringify(group);
      const inline = Buffer.byteLength(json) <= INLINE_LIMIT;
      const content = Buffer.from(json);
      const blob_sha256 = inline ? null : (await this.blobs.write(content, { maxBytes: content.byteLength })).sha256;
      records.push({ _id: randomUUID(), model_id: modelId, split, step, batch_id: batchId, index, group_json: inline ? json : null, blob_sha256, created_at });
    }
    // Bounded batches keep each insert message well under the wire limit.
    for (let start = 0; start < records.length; start += 100) await this.groups.insertMany(records.slice(start, start + 100));
    return batchId;
  }

  /** Which of these blobs a logged group is. */
  async referencedBlobs(names: readonly string[]): Promise<Set<string>> {
    const records = await this.groups.find({ blob_sha256: { $in: [...names] } }, { projection: { blob_sha256: 1 } }).toArray();
    return new Set(records.map((record) => record.blob_sha256).filter((name): name is string => typeof name === "string"));
  }

  async migrateLegacyBlobs(copy: CopyLegacyBlob): Promise<number> {
    let changed = 0;
    for await (const record of this.groups.find({ blob_id: { $type: "objectId" } }, { projection: { group_json: 0 } })) {
      const id = record.blob_id as ObjectId;
      await this.groups.updateOne({ _id: record._id }, { $set: { blob_sha256: (await copy(id))?.sha256 ?? lostLegacyBlob(id) }, $unset: { blob_id: "" } });
      changed++;
    }
    return changed;
  }

  async deleteForModel(modelId: string): Promise<number> {
    return (await this.groups.deleteMany({ model_id: modelId })).deletedCount;
  }
}
