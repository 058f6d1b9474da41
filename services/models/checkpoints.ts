// Checkpoints: one per (model, step); step 0 is the base model (no adapter). The trainer adds one
// per finished job through createCheckpoint; adapters are blobs (blob store, by content hash)
// written before the row, so a listed checkpoint always has its adapter: a llama.cpp LoRA GGUF
// (what the engine serves) and, since the PyTorch trainer, the same adapter in PEFT's format (two
// files; older checkpoints have only the GGUF). Deleting a checkpoint deletes its row; the blob
// collector removes adapters no checkpoint names.
import { createHash } from "node:crypto";
import { MongoServerError, type Collection, type Db, type ObjectId } from "mongodb";
import { badRequest, conflict } from "../core/errors.js";
import { type BlobReferences, type BlobStore, type CopyLegacyBlob, isDuplicateKey, type LegacyBlobOwner, lostLegacyBlob, type OpenedBlob, type Page, paginate, readBlob, upsertTolerant } from "../store/index.js";
import { ADAPTER_GGUF_FILE } from "../weights/index.js";
import { fieldKey } from "./runs.js";

export interface CheckpointRecord {
  _id: string;
  model_id: string;
  step: number;
  metrics: Record<string, number>;
  /** The GGUF adapter's blob (SHA-256); null at step 0, the base model itself. */
  adapter_sha256: string | null;
  /** The PEFT adapter's files (adapter_config.json, adapter_model.safetensors); absent before PEFT export. */
  peft_files?: { name: string; sha256: string; blob_id?: ObjectId }[] | null;
  /** Before the blob store: the GGUF's GridFS file (moved at start-up). */
  adapter_blob_id?: ObjectId | null;
  /** The training job that produced it (none for step 0), so a retried job never adds a second one. */
  job_id?: string | null;
  created_at: Date;
  /** As the W&B API's `lora` artifact (services/wandb): metadata (JSON text) and extra aliases. */
  artifact_metadata?: string;
  artifact_aliases?: string[];
  /** Size and MD5 (base64) of each PEFT file, kept once computed: W&B's file digests. */
  peft_md5?: PeftFileDigest[];
  /**
   * A name unique within the model (Tinker's `sampler_weights/{name}`), looked up with byName;
   * absent or null for checkpoints named only by their step.
   */
  name?: string | null;
}

/** A checkpoint name's claim: `_id` derived from (model, name), so byName is `_id` lookups only. */
interface NameClaim {
  _id: string;
  model_id: string;
  name: string;
  /** The checkpoint that holds the name (checkpointId(model, step)). */
  checkpoint_id: string;
  claimed_at: Date;
}

/** A claim whose checkpoint never appeared (its create died in between) may be taken over after this long. */
const ABANDONED_CLAIM_MS = 60_000;

/**
 * A checkpoint's id is derived from its model and step (a UUID-shaped SHA-1), so finding a step is
 * an `_id` lookup: on the embedded FerretDB that is the only lookup that does not scan the whole
 * collection (the latest of 5,000 checkpoints took 317 ms by a sorted query, on every request).
 */
export function checkpointId(modelId: string, step: number): string {
  return uuidOfSha1(`checkpoint/${modelId}/${step}`);
}

/** The `_id` of a checkpoint name's claim: a UUID-shaped SHA-1 of (model, name), like checkpointId. */
export function checkpointNameId(modelId: string, name: string): string {
  return uuidOfSha1(`checkpoint-name/${modelId}/${name}`);
}

/** A version-5-shaped UUID of the SHA-1 of `text`. */
function uuidOfSha1(text: string): string {
  const h = createHash("sha1").update(text).digest("hex");
  const variant = ((parseInt(h[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface PeftFileDigest {
  name: string;
  size: number;
  md5: string;
}

/** A checkpoint's adapter as bytes: the GGUF and, when written, the PEFT files by name. */
export interface AdapterBytes {
  gguf: Uint8Array;
  peft: Record<string, Uint8Array> | null;
}

/** The GGUF file of a checkpoint's adapter (weights names the adapter files). */
export const GGUF_ADAPTER_FILE = ADAPTER_GGUF_FILE;

export class Checkpoints implements BlobReferences, LegacyBlobOwner {
  private readonly checkpoints: Collection<CheckpointRecord>;
  /** Per model, its highest step: `latest` is then two `_id` lookups instead of a sorted query. */
  private readonly heads: Collection<{ _id: string; step: number }>;
  /**
   * Checkpoint names (CheckpointRecord.name), one document per (model, name) keyed by `_id`: the
   * name's uniqueness and its lookup. A unique index over the checkpoints' own `name` cannot do
   * either here: most checkpoints have no name (MongoDB indexes them all as null and would refuse
   * the second; partial indexes are not implemented by FerretDB), and FerretDB answers nothing but
   * `_id` equality from an index (docs/ferretdb-notes.md).
   */
  private readonly names: Collection<NameClaim>;

  constructor(
    db: Db,
    private readonly blobs: BlobStore,
  ) {
    this.checkpoints = db.collection<CheckpointRecord>("checkpoints");
    this.heads = db.collection<{ _id: string; step: number }>("checkpoint_heads");
    this.names = db.collection<NameClaim>("checkpoint_names");
  }

  async ensureIndexes(): Promise<void> {
    await this.checkpoints.createIndex({ model_id: 1, step: 1 }, { unique: true });
    await this.checkpoints.createIndex({ adapter_sha256: 1 });
    await this.checkpoints.createIndex({ "peft_files.sha256": 1 });
    // A model's names, for deleting them with the model (lookups are by `_id`).
    await this.names.createIndex({ model_id: 1 });
  }

  /**
   * Adds a checkpoint; a step that exists already is a conflict, and so is a `name` another
   * checkpoint of the model holds. The name is claimed before the row is written, so a named
   * checkpoint is always found by byName.
   */
  async create(modelId: string, step: number, metrics: Record<string, number>, adapter?: AdapterBytes, jobId?: string, options: { name?: string | null } = {}): Promise<CheckpointRecord> {
    const name = options.name ?? null;
    if (name !== null && name.length === 0) throw badRequest("a checkpoint name must not be empty");
    const write = (data: Uint8Array) => this.blobs.write(data, { maxBytes: data.byteLength });
    const gguf = adapter ? await write(adapter.gguf) : null;
    const peftFiles: { name: string; sha256: string }[] = [];
    for (const [name, data] of Object.entries(adapter?.peft ?? {})) peftFiles.push({ name, sha256: (await write(data)).sha256 });
    const record: CheckpointRecord = {
      _id: checkpointId(modelId, step),
      model_id: modelId,
      step,
      metrics: sanitize(metrics),
      adapter_sha256: gguf?.sha256 ?? null,
      peft_files: adapter?.peft ? peftFiles : null,
      job_id: jobId ?? null,
      created_at: new Date(),
      ...(name !== null ? { name } : {}),
    };
    if (name !== null) await this.claimName(modelId, name, record._id);
    try {
      await this.checkpoints.insertOne(record);
    } catch (error) {
      // The adapter's blobs stay until the collector finds no checkpoint naming them.
      await this.releaseNames([record]).catch(() => undefined);
      if (error instanceof MongoServerError && error.code === 11000) throw conflict(`model ${modelId} already has a checkpoint at step ${step}`);
      throw error;
    }
    await this.raiseHead(modelId, step);
    return record;
  }

  /**
   * Claims `name` for the checkpoint `checkpointId` of the model, or throws a conflict naming the
   * step that holds it. A claim left by a create that died before its row (no such checkpoint, or
   * one without the name) is taken over once it is older than ABANDONED_CLAIM_MS; the takeover is
   * a compare-and-set on the claim's scalar `checkpoint_id`.
   */
  private async claimName(modelId: string, name: string, checkpointId: string): Promise<void> {
    const _id = checkpointNameId(modelId, name);
    try {
      await this.names.insertOne({ _id, model_id: modelId, name, checkpoint_id: checkpointId, claimed_at: new Date() });
      return;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const claim = await this.names.findOne({ _id });
    if (!claim) throw conflict(`model ${modelId} is creating a checkpoint named "${name}" at this moment; retry`);
    if (claim.checkpoint_id === checkpointId) return;
    const holder = await this.checkpoints.findOne({ _id: claim.checkpoint_id });
    if (holder && holder.name === name) throw conflict(`model ${modelId} already has a checkpoint named "${name}" (step ${holder.step})`);
    if (Date.now() - claim.claimed_at.getTime() < ABANDONED_CLAIM_MS) throw conflict(`model ${modelId} is creating a checkpoint named "${name}" at this moment; retry`);
    const taken = await this.names.updateOne({ _id, checkpoint_id: claim.checkpoint_id }, { $set: { checkpoint_id: checkpointId, claimed_at: new Date() } });
    if (taken.matchedCount === 0) throw conflict(`model ${modelId} is creating a checkpoint named "${name}" at this moment; retry`);
  }

  /** The model's checkpoint of that name (CheckpointRecord.name), or null: two `_id` lookups. */
  async byName(modelId: string, name: string): Promise<CheckpointRecord | null> {
    const claim = await this.names.findOne({ _id: checkpointNameId(modelId, name) });
    if (!claim) return null;
    const checkpoint = await this.checkpoints.findOne({ _id: claim.checkpoint_id });
    // A claim whose create has not written (or never wrote) its row, or a row deleted meanwhile.
    return checkpoint && checkpoint.model_id === modelId && checkpoint.name === name ? checkpoint : null;
  }

  /** Releases the names of deleted checkpoints (each only while it still names that checkpoint). */
  private async releaseNames(checkpoints: readonly Pick<CheckpointRecord, "_id" | "model_id" | "name">[]): Promise<void> {
    for (const checkpoint of checkpoints) {
      if (checkpoint.name) await this.names.deleteOne({ _id: checkpointNameId(checkpoint.model_id, checkpoint.name), checkpoint_id: checkpoint._id });
    }
  }

  private async raiseHead(modelId: string, step: number): Promise<void> {
    await upsertTolerant(this.heads, { _id: modelId }, { $max: { step } });
  }

  /** The highest step by a sorted query (what the head saves on every `latest`). */
  private highest(modelId: string): Promise<CheckpointRecord | null> {
    return this.checkpoints.findOne({ model_id: modelId }, { sort: { step: -1 } });
  }

  /** After deletions: the head is the highest remaining step (or gone with the last checkpoint). */
  private async resetHead(modelId: string): Promise<void> {
    const top = await this.highest(modelId);
    if (top) await this.heads.updateOne({ _id: modelId }, { $set: { step: top.step } }, { upsert: true });
    else await this.heads.deleteOne({ _id: modelId });
  }

  /** The base-model checkpoint every model starts with (idempotent). */
  async ensureStepZero(modelId: string): Promise<void> {
    await this.checkpoints
      .updateOne(
        { _id: checkpointId(modelId, 0) },
        { $setOnInsert: { model_id: modelId, step: 0, metrics: {}, adapter_sha256: null, created_at: new Date() } },
        { upsert: true },
      )
      .catch((error: unknown) => {
        // Two concurrent upserts: the other one created it.
        if (!isDuplicateKey(error)) throw error;
      });
    await this.raiseHead(modelId, 0);
  }

  async ofJob(modelId: string, jobId: string): Promise<CheckpointRecord | null> {
    const found = await this.checkpoints.findOne({ model_id: modelId, job_id: jobId });
    // A retried job finishing with the checkpoint its dead attempt wrote: the head may not have
    // been raised before that attempt died.
    if (found) await this.raiseHead(modelId, found.step);
    return found;
  }

  /**
   * The highest step, read fresh on every call (so a checkpoint another process just wrote is
   * served by the next request): the head's step, looked up by id. Without a usable head (none yet,
   * or its step deleted meanwhile) it falls back to a sorted query.
   */
  async latest(modelId: string): Promise<CheckpointRecord | null> {
    const head = await this.heads.findOne({ _id: modelId });
    const current = head ? await this.atStep(modelId, head.step) : null;
    return current ?? (await this.highest(modelId));
  }

  async atStep(modelId: string, step: number): Promise<CheckpointRecord | null> {
    return this.checkpoints.findOne({ _id: checkpointId(modelId, step) });
  }

  async byId(checkpointId: string): Promise<CheckpointRecord | null> {
    return this.checkpoints.findOne({ _id: checkpointId });
  }

  /** The names of a checkpoint's adapter files (none at step 0). */
  adapterFileNames(checkpoint: CheckpointRecord): string[] {
    if (!checkpoint.adapter_sha256) return [];
    return [GGUF_ADAPTER_FILE, ...(checkpoint.peft_files ?? []).map((f) => f.name)];
  }

  /** The blob of one adapter file of a checkpoint (`adapter.gguf` or a PEFT file), or null when it has none such. */
  adapterBlobName(checkpoint: CheckpointRecord, name: string = GGUF_ADAPTER_FILE): string | null {
    return (name === GGUF_ADAPTER_FILE ? checkpoint.adapter_sha256 : (checkpoint.peft_files ?? []).find((f) => f.name === name)?.sha256) ?? null;
  }

  /** One adapter file of a checkpoint, streamed, or null when it has none such. */
  async openAdapterFile(checkpoint: CheckpointRecord, name: string = GGUF_ADAPTER_FILE): Promise<OpenedBlob | null> {
    const sha256 = this.adapterBlobName(checkpoint, name);
    return sha256 ? this.blobs.open(sha256) : null;
  }

  /** One adapter file in memory, or null when the checkpoint has none such. */
  async readAdapterFile(checkpoint: CheckpointRecord, name: string = GGUF_ADAPTER_FILE): Promise<Buffer | null> {
    const sha256 = this.adapterBlobName(checkpoint, name);
    return sha256 ? readBlob(this.blobs, sha256) : null;
  }

  /** The whole adapter in memory (a few MB to a few hundred): to continue training from it. */
  async readAdapter(checkpoint: CheckpointRecord): Promise<AdapterBytes | null> {
    if (!checkpoint.adapter_sha256) return null;
    const peft = checkpoint.peft_files?.length ? Object.fromEntries(await Promise.all(checkpoint.peft_files.map(async (f) => [f.name, await readBlob(this.blobs, f.sha256)] as const))) : null;
    return { gguf: await readBlob(this.blobs, checkpoint.adapter_sha256), peft };
  }

  /** Which of these blobs a checkpoint's adapter file is. */
  async referencedBlobs(names: readonly string[]): Promise<Set<string>> {
    const wanted = new Set(names);
    const held = new Set<string>();
    const cursor = this.checkpoints.find({ $or: [{ adapter_sha256: { $in: [...names] } }, { "peft_files.sha256": { $in: [...names] } }] }, { projection: { adapter_sha256: 1, peft_files: 1 } });
    for await (const checkpoint of cursor) {
      for (const sha256 of [checkpoint.adapter_sha256, ...(checkpoint.peft_files ?? []).map((f) => f.sha256)]) if (sha256 && wanted.has(sha256)) held.add(sha256);
    }
    return held;
  }

  async migrateLegacyBlobs(copy: CopyLegacyBlob): Promise<number> {
    let changed = 0;
    for await (const checkpoint of this.checkpoints.find({ $or: [{ adapter_blob_id: { $type: "objectId" } }, { "peft_files.blob_id": { $exists: true } }, { adapter_sha256: { $exists: false } }] })) {
      const move = async (id: ObjectId) => (await copy(id))?.sha256 ?? lostLegacyBlob(id);
      const gguf = checkpoint.adapter_blob_id ? await move(checkpoint.adapter_blob_id) : (checkpoint.adapter_sha256 ?? null);
      const peft = checkpoint.peft_files ? await Promise.all(checkpoint.peft_files.map(async (f) => ({ name: f.name, sha256: f.blob_id ? await move(f.blob_id) : f.sha256 }))) : checkpoint.peft_files;
      await this.checkpoints.updateOne({ _id: checkpoint._id }, { $set: { adapter_sha256: gguf, peft_files: peft ?? null }, $unset: { adapter_blob_id: "" } });
      changed++;
    }
    return changed;
  }

  async list(modelId: string, options: { after?: string; limit: number; order: "asc" | "desc" }): Promise<Page<CheckpointRecord>> {
    return paginate(this.checkpoints, { filter: { model_id: modelId }, orderField: "step", orderIsUnique: true, what: "checkpoint", ...options });
  }

  /** Sets the W&B artifact fields of a checkpoint (each when given). */
  async setArtifactFields(checkpointId: string, fields: { metadata?: string; aliases?: string[]; peftMd5?: PeftFileDigest[] }): Promise<void> {
    const set: Partial<CheckpointRecord> = {};
    if (fields.metadata !== undefined) set.artifact_metadata = fields.metadata;
    if (fields.aliases !== undefined) set.artifact_aliases = fields.aliases;
    if (fields.peftMd5 !== undefined) set.peft_md5 = fields.peftMd5;
    if (Object.keys(set).length > 0) await this.checkpoints.updateOne({ _id: checkpointId }, { $set: set });
  }

  async mergeMetrics(checkpointId: string, metrics: Record<string, number>): Promise<void> {
    const set = Object.fromEntries(Object.entries(metrics).map(([name, value]) => [`metrics.${fieldKey(name)}`, value]));
    if (Object.keys(set).length > 0) await this.checkpoints.updateOne({ _id: checkpointId }, { $set: set });
  }

  /** Deletes the given steps with their adapters; unknown steps are reported, not an error. */
  async deleteSteps(modelId: string, steps: number[]): Promise<{ deleted: number; notFound: number[] }> {
    const wanted = [...new Set(steps)];
    const found = await this.checkpoints.find({ model_id: modelId, step: { $in: wanted } }).toArray();
    for (const checkpoint of found) await this.checkpoints.deleteOne({ _id: checkpoint._id });
    await this.releaseNames(found);
    if (found.length > 0) await this.resetHead(modelId);
    const foundSteps = new Set(found.map((c) => c.step));
    return { deleted: found.length, notFound: wanted.filter((s) => !foundSteps.has(s)) };
  }

  /** Deletes one checkpoint. */
  async deleteById(checkpointId: string): Promise<void> {
    const checkpoint = await this.checkpoints.findOneAndDelete({ _id: checkpointId });
    if (checkpoint) await this.releaseNames([checkpoint]);
    if (checkpoint) await this.resetHead(checkpoint.model_id);
  }

  /** Deletes every checkpoint of a model. */
  async deleteAll(modelId: string): Promise<number> {
    await this.heads.deleteOne({ _id: modelId });
    const deleted = (await this.checkpoints.deleteMany({ model_id: modelId })).deletedCount;
    await this.names.deleteMany({ model_id: modelId });
    return deleted;
  }
}

function sanitize(metrics: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(metrics).map(([name, value]) => [fieldKey(name), value]));
}
