// Training-job records and the queue workers claim from. A job is `queued` when created,
// `running` while a worker holds its lease, then `succeeded` or `failed`. One job per model runs
// at a time, in creation order: a claim takes the model's lock document first, and a lease that
// is not renewed lets another worker take the job over. Entities take turns at the workers.
import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db, type ObjectId } from "mongodb";
import type { JsonObject } from "@bufbuild/protobuf";
import { notFound } from "../core/errors.js";
import { type BlobReferences, type BlobStore, type CopyLegacyBlob, type LegacyBlobOwner, lostLegacyBlob, type Page, paginate, readBlob } from "../store/index.js";
import type { EventLog } from "../events/index.js";

export type JobType = "rl" | "sft";
export type JobStatus = "queued" | "running" | "succeeded" | "failed";

export interface TrainingJobRecord {
  _id: string;
  entity: string;
  model_id: string;
  type: JobType;
  status: JobStatus;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  error_message: string | null;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  /** RL: the trajectory groups as sent (JSON text, a blob). */
  input_sha256: string | null;
  /** Before the blob store: the input's GridFS file (moved at start-up). */
  input_blob_id?: ObjectId | null;
  /** RL: how many groups that is (absent on jobs stored before it was recorded). */
  input_groups?: number;
  /** JSON text of experimental_config (RL) or of the request's config objects (SFT). */
  config_json: string;
  training_data_url: string | null;
  /** The checkpoint step a succeeded job produced. */
  step: number | null;
  /** When a worker last claimed it (entities take turns by it); absent before the first claim. */
  claimed_at?: Date | null;
}

interface ModelLockRecord {
  _id: string; // model id
  holder: string | null; // job id
  expires_at: Date | null;
}

export class TrainingJobs implements BlobReferences, LegacyBlobOwner {
  private readonly jobs: Collection<TrainingJobRecord>;
  private readonly locks: Collection<ModelLockRecord>;

  constructor(
    db: Db,
    private readonly blobs: BlobStore,
    private readonly events: EventLog,
  ) {
    this.jobs = db.collection<TrainingJobRecord>("training_jobs");
    this.locks = db.collection<ModelLockRecord>("model_locks");
  }

  async ensureIndexes(): Promise<void> {
    await this.jobs.createIndex({ status: 1, created_at: 1 });
    await this.jobs.createIndex({ model_id: 1, created_at: 1, _id: 1 });
    await this.jobs.createIndex({ entity: 1, status: 1, created_at: 1 });
    await this.jobs.createIndex({ entity: 1, claimed_at: -1 });
    await this.jobs.createIndex({ input_sha256: 1 });
  }

  async createRl(input: { entity: string; modelId: string; groups: JsonObject[]; experimentalConfig: JsonObject }): Promise<TrainingJobRecord> {
    const id = randomUUID();
    const content = Buffer.from(JSON.stringify(input.groups));
    const inputBlob = (await this.blobs.write(content, { maxBytes: content.byteLength })).sha256;
    return this.insert({ id, entity: input.entity, modelId: input.modelId, type: "rl", inputBlob, inputGroups: input.groups.length, config: input.experimentalConfig, url: null });
  }

  /** SFT creation is idempotent per (model, training_data_url) while the earlier job has not failed. */
  async createSft(input: { entity: string; modelId: string; trainingDataUrl: string; config: JsonObject }): Promise<TrainingJobRecord> {
    const existing = await this.jobs.findOne({ model_id: input.modelId, type: "sft", training_data_url: input.trainingDataUrl, status: { $ne: "failed" } });
    if (existing) return existing;
    return this.insert({ id: randomUUID(), entity: input.entity, modelId: input.modelId, type: "sft", inputBlob: null, config: input.config, url: input.trainingDataUrl });
  }

  private async insert(input: {
    id: string;
    entity: string;
    modelId: string;
    type: JobType;
    inputBlob: string | null;
    inputGroups?: number;
    config: JsonObject;
    url: string | null;
  }): Promise<TrainingJobRecord> {
    const record: TrainingJobRecord = {
      _id: input.id,
      entity: input.entity,
      model_id: input.modelId,
      type: input.type,
      status: "queued",
      created_at: new Date(),
      started_at: null,
      ended_at: null,
      error_message: null,
      attempts: 0,
      lease_owner: null,
      lease_expires_at: null,
      input_sha256: input.inputBlob,
      ...(input.inputGroups === undefined ? {} : { input_groups: input.inputGroups }),
      config_json: JSON.stringify(input.config),
      training_data_url: input.url,
      step: null,
    };
    // The stream exists before the job can be seen, so listing a new job's events never 404s.
    await this.events.open(record._id);
    await this.jobs.insertOne(record);
    return record;
  }

  /** The caller's job, or 404 (another entity's job is indistinguishable from an absent one). */
  async getOwned(entity: string, jobId: string): Promise<TrainingJobRecord> {
    const job = await this.jobs.findOne({ _id: jobId, entity });
    if (!job) throw notFound(`training job ${jobId} not found`);
    return job;
  }

  /** A model's jobs, newest first. */
  async listForModel(modelId: string, options: { after?: string; limit: number }): Promise<Page<TrainingJobRecord>> {
    return paginate(this.jobs, { filter: { model_id: modelId }, orderField: "created_at", order: "desc", what: "training job", ...options });
  }

  /** A model's RL jobs (those with stored trajectory groups), newest first. */
  async rlJobsOf(modelId: string): Promise<TrainingJobRecord[]> {
    return this.jobs.find({ model_id: modelId, type: "rl" }).sort({ created_at: -1, _id: -1 }).toArray();
  }

  /** One of the model's RL jobs, or null. */
  async rlJobOf(modelId: string, jobId: string): Promise<TrainingJobRecord | null> {
    return this.jobs.findOne({ _id: jobId, model_id: modelId, type: "rl" });
  }

  async inputOf(job: TrainingJobRecord): Promise<JsonObject[]> {
    return job.input_sha256 ? (JSON.parse((await readBlob(this.blobs, job.input_sha256)).toString("utf8")) as JsonObject[]) : [];
  }

  /** Which of these blobs a job's input is. */
  async referencedBlobs(names: readonly string[]): Promise<Set<string>> {
    const jobs = await this.jobs.find({ input_sha256: { $in: [...names] } }, { projection: { input_sha256: 1 } }).toArray();
    return new Set(jobs.map((job) => job.input_sha256).filter((name): name is string => typeof name === "string"));
  }

  async migrateLegacyBlobs(copy: CopyLegacyBlob): Promise<number> {
    let changed = 0;
    for await (const job of this.jobs.find({ input_blob_id: { $type: "objectId" } })) {
      const id = job.input_blob_id as ObjectId;
      await this.jobs.updateOne({ _id: job._id }, { $set: { input_sha256: (await copy(id))?.sha256 ?? lostLegacyBlob(id) }, $unset: { input_blob_id: "" } });
      changed++;
    }
    return changed;
  }

  /** Jobs per entity, type and status (/metrics); one grouped read. */
  async countsByState(): Promise<{ entity: string; type: JobType; status: JobStatus; count: number }[]> {
    const groups = await this.jobs
      .aggregate<{ _id: { entity: string; type: JobType; status: JobStatus }; count: number }>([{ $group: { _id: { entity: "$entity", type: "$type", status: "$status" }, count: { $sum: 1 } } }])
      .toArray();
    return groups.map((group) => ({ ...group._id, count: group.count }));
  }

  async depth(): Promise<{ queued: number; running: number }> {
    const [queued, running] = await Promise.all([this.jobs.countDocuments({ status: "queued" }), this.jobs.countDocuments({ status: "running" })]);
    return { queued, running };
  }

  /**
   * Claims a job for `workerId` and leases it. Entities take turns: the entity with the fewest
   * jobs running now goes first, then the one whose last claim is oldest (never claimed: first),
   * so one entity's backlog delays another's next job by at most the jobs already running. Within
   * an entity, the oldest claimable job (queued, or running with an expired lease) whose model has
   * no other job ahead of it or running.
   */
  async claim(workerId: string, leaseMs: number): Promise<TrainingJobRecord | null> {
    const now = new Date();
    const claimable = { $or: [{ status: "queued" as const }, { status: "running" as const, lease_expires_at: { $lt: now } }] };
    // $group rather than distinct: FerretDB's distinct refuses the driver's maxTimeMS.
    const groups = await this.jobs.aggregate<{ _id: unknown }>([{ $match: claimable }, { $group: { _id: "$entity" } }]).toArray();
    const entities = groups.map((group) => group._id).filter((entity): entity is string => typeof entity === "string");
    for (const entity of await this.inTurnOrder(entities, now)) {
      const claimed = await this.claimFor(entity, claimable, workerId, leaseMs);
      if (claimed) return claimed;
    }
    return null;
  }

  /** Entities ordered by running jobs (fewest first), then by their last claim (oldest first). */
  private async inTurnOrder(entities: string[], now: Date): Promise<string[]> {
    const turns = await Promise.all(
      entities.map(async (entity) => {
        const [running, last] = await Promise.all([
          this.jobs.countDocuments({ entity, status: "running", lease_expires_at: { $gte: now } }),
          this.jobs.find({ entity, claimed_at: { $ne: null } }, { projection: { claimed_at: 1 } }).sort({ claimed_at: -1 }).limit(1).next(),
        ]);
        return { entity, running, lastClaim: last?.claimed_at?.getTime() ?? 0 };
      }),
    );
    turns.sort((a, b) => a.running - b.running || a.lastClaim - b.lastClaim || (a.entity < b.entity ? -1 : 1));
    return turns.map((turn) => turn.entity);
  }

  private async claimFor(entity: string, claimable: object, workerId: string, leaseMs: number): Promise<TrainingJobRecord | null> {
    const candidates = await this.jobs.find({ entity, ...claimable }).sort({ created_at: 1, _id: 1 }).limit(50).toArray();
    const seenModels = new Set<string>();
    for (const job of candidates) {
      if (seenModels.has(job.model_id)) continue; // only a model's oldest claimable job
      seenModels.add(job.model_id);
      const ahead = await this.jobs.findOne({ model_id: job.model_id, status: { $in: ["queued", "running"] }, created_at: { $lt: job.created_at } });
      if (ahead) continue;
      const expires = new Date(Date.now() + leaseMs);
      if (!(await this.lockModel(job.model_id, job._id, expires))) continue;
      const claimed = await this.jobs.findOneAndUpdate(
        { _id: job._id, status: job.status, lease_expires_at: job.lease_expires_at },
        { $set: { status: "running", lease_owner: workerId, lease_expires_at: expires, started_at: job.started_at ?? new Date(), claimed_at: new Date() }, $inc: { attempts: 1 } },
        { returnDocument: "after" },
      );
      if (claimed) return claimed;
      await this.unlockModel(job.model_id, job._id);
    }
    return null;
  }

  /** Jobs of an entity not yet finished (queued or running), for its queue limit. */
  async unfinishedOf(entity: string): Promise<number> {
    return this.jobs.countDocuments({ entity, status: { $in: ["queued", "running"] } });
  }

  /** Renews a lease; false when the worker no longer holds it (taken over, cancelled, deleted). */
  async heartbeat(jobId: string, workerId: string, leaseMs: number): Promise<boolean> {
    const expires = new Date(Date.now() + leaseMs);
    const job = await this.jobs.findOneAndUpdate({ _id: jobId, lease_owner: workerId, status: "running" }, { $set: { lease_expires_at: expires } });
    if (!job) return false;
    await this.locks.updateOne({ _id: job.model_id, holder: jobId }, { $set: { expires_at: expires } });
    return true;
  }

  async finish(jobId: string, workerId: string, step: number): Promise<boolean> {
    return this.end({ _id: jobId, lease_owner: workerId, status: "running" }, { status: "succeeded", step, error_message: null });
  }

  /** Gives a running job back to the queue (a worker shutting down), so another worker takes it at once. */
  async requeue(jobId: string, workerId: string): Promise<boolean> {
    return this.backToQueue(jobId, workerId, -1);
  }

  /** Puts a job whose attempt failed for a reason of its own (its trainer died) back in the queue; the attempt counts. */
  async release(jobId: string, workerId: string): Promise<boolean> {
    return this.backToQueue(jobId, workerId, 0);
  }

  private async backToQueue(jobId: string, workerId: string, attempts: number): Promise<boolean> {
    const job = await this.jobs.findOneAndUpdate(
      { _id: jobId, lease_owner: workerId, status: "running" },
      { $set: { status: "queued", lease_owner: null, lease_expires_at: null }, $inc: { attempts } },
    );
    if (job) await this.unlockModel(job.model_id, job._id);
    return job !== null;
  }

  /** Fails a job that is queued, or running under `workerId` (any worker when omitted). */
  async fail(jobId: string, message: string, workerId?: string): Promise<boolean> {
    const filter = workerId ? { _id: jobId, lease_owner: workerId, status: "running" as const } : { _id: jobId, status: { $in: ["queued", "running"] as JobStatus[] } };
    return this.end(filter, { status: "failed", error_message: message });
  }

  /** Fails the model's unfinished jobs and gives each its terminal event (used before deleting a model). */
  async cancelForModel(modelId: string, reason: string): Promise<string[]> {
    const open = await this.jobs.find({ model_id: modelId, status: { $in: ["queued", "running"] } }).toArray();
    for (const job of open) {
      if (await this.fail(job._id, reason)) {
        if (!(await this.events.hasEnded(job._id))) await this.events.append(job._id, "training_failed", { error_message: reason }).catch(() => undefined);
      }
    }
    return open.map((job) => job._id);
  }

  async idsForModel(modelId: string): Promise<string[]> {
    return (await this.jobs.find({ model_id: modelId }, { projection: { _id: 1 } }).toArray()).map((j) => j._id);
  }

  async deleteForModel(modelId: string): Promise<number> {
    await this.locks.deleteOne({ _id: modelId });
    return (await this.jobs.deleteMany({ model_id: modelId })).deletedCount;
  }

  private async end(filter: Parameters<Collection<TrainingJobRecord>["findOneAndUpdate"]>[0], set: Partial<TrainingJobRecord>): Promise<boolean> {
    const job = await this.jobs.findOneAndUpdate(filter, { $set: { ...set, ended_at: new Date(), lease_owner: null, lease_expires_at: null } });
    if (!job) return false;
    await this.unlockModel(job.model_id, job._id);
    return true;
  }

  /**
   * Takes the model's lock for a job: insert it if none exists yet (a duplicate-key error means
   * another worker got there first), else take it over if free, expired or already this job's.
   * No upsert: FerretDB reports a duplicate from an update as a generic error, not 11000.
   */
  private async lockModel(modelId: string, jobId: string, expires: Date): Promise<boolean> {
    try {
      await this.locks.insertOne({ _id: modelId, holder: jobId, expires_at: expires });
      return true;
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
    }
    const taken = await this.locks.updateOne(
      { _id: modelId, $or: [{ holder: null }, { holder: jobId }, { expires_at: { $lt: new Date() } }] },
      { $set: { holder: jobId, expires_at: expires } },
    );
    return taken.matchedCount === 1;
  }

  private async unlockModel(modelId: string, jobId: string): Promise<void> {
    await this.locks.updateOne({ _id: modelId, holder: jobId }, { $set: { holder: null, expires_at: null } });
  }
}
