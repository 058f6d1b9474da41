// The append-only event log of training jobs. Each job has a stream document holding its sequence
// counter and state; appends update it atomically with a filter on that state, so the invariants
// hold even with several workers and servers on one database: `training_started` first, only
// numbers in `gradient_step` data, exactly one terminal event, nothing after it.
//
// Events are stored in buckets of BUCKET_SIZE per job (`_id` = job id and bucket number), and an
// event's id carries its sequence number, so reading a page is one or two lookups by `_id` (the
// bucket pattern). One document per event made every list a scan of all events of all jobs on the
// embedded database (FerretDB's SQLite backend pushes down nothing but `_id` equality): 0.7 s per
// page at 20 000 events, and the ART client reads a page every second while it trains.
import { EventEmitter } from "node:events";
import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db } from "mongodb";
import type { JsonObject } from "@bufbuild/protobuf";
import { ApiError, badRequest, notFound } from "../core/errors.js";
import type { Page } from "../store/pagination.js";

export const EVENT_TYPES = ["training_started", "gradient_step", "training_ended", "training_failed"] as const;
export type EventType = (typeof EVENT_TYPES)[number];
const TERMINAL = new Set<EventType>(["training_ended", "training_failed"]);

interface StreamRecord {
  _id: string; // job id
  seq: number;
  started: boolean;
  terminal: boolean;
}

export interface EventRecord {
  /** A UUID whose last group is the sequence number in hex (see eventId). */
  id: string;
  seq: number;
  type: EventType;
  /** JSON text: metric names may hold characters document keys cannot. */
  data_json: string;
  created_at: Date;
}

interface BucketRecord {
  _id: string; // `${job id}:${bucket}`
  job_id: string;
  bucket: number;
  events: EventRecord[];
}

export interface JobEvent {
  id: string;
  type: EventType;
  data: JsonObject;
}

export class EventInvariantError extends ApiError {
  constructor(message: string) {
    super("conflict", message);
  }
}

// How often a watcher looks for events appended by other processes (in-process appends wake it at once).
const FALLBACK_POLL_MS = 1_000;
const BUCKET_SIZE = 256;

const bucketOf = (seq: number) => Math.floor((seq - 1) / BUCKET_SIZE);
const bucketId = (jobId: string, bucket: number) => `${jobId}:${bucket}`;

/** A v4-shaped UUID whose last 12 hex digits are the event's sequence number. */
function eventId(seq: number): string {
  return `${randomUUID().slice(0, 24)}${seq.toString(16).padStart(12, "0")}`;
}

function seqOfId(id: string): number | null {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) return null;
  const seq = parseInt(id.slice(24), 16);
  return seq >= 1 ? seq : null;
}

export class EventLog {
  private readonly streams: Collection<StreamRecord>;
  private readonly buckets: Collection<BucketRecord>;
  private readonly appended = new EventEmitter();

  constructor(db: Db) {
    this.streams = db.collection<StreamRecord>("event_streams");
    this.buckets = db.collection<BucketRecord>("events");
    this.appended.setMaxListeners(0);
  }

  async ensureIndexes(): Promise<void> {
    await this.buckets.createIndex({ job_id: 1, bucket: 1 });
  }

  /** Creates a job's (empty) stream; done when the job is created. */
  async open(jobId: string): Promise<void> {
    await this.streams.updateOne({ _id: jobId }, { $setOnInsert: { seq: 0, started: false, terminal: false } }, { upsert: true });
  }

  async append(jobId: string, type: EventType, data: JsonObject = {}): Promise<JobEvent> {
    checkData(type, data);
    const filter =
      type === "training_started"
        ? { _id: jobId, started: false, terminal: false }
        : type === "gradient_step"
          ? { _id: jobId, started: true, terminal: false }
          : { _id: jobId, terminal: false };
    const set = type === "training_started" ? { started: true } : TERMINAL.has(type) ? { terminal: true } : {};
    const stream = await this.streams.findOneAndUpdate(filter, { $inc: { seq: 1 }, ...(Object.keys(set).length ? { $set: set } : {}) }, { returnDocument: "after" });
    if (!stream) throw await this.explainRefusal(jobId, type);
    const record: EventRecord = { id: eventId(stream.seq), seq: stream.seq, type, data_json: JSON.stringify(data), created_at: new Date() };
    await this.push(jobId, record);
    this.appended.emit(jobId);
    return toEvent(record);
  }

  /** Adds an event to its bucket, creating the bucket with its first event. */
  private async push(jobId: string, record: EventRecord): Promise<void> {
    const bucket = bucketOf(record.seq);
    const filter = { _id: bucketId(jobId, bucket) };
    const update = { $push: { events: record }, $setOnInsert: { job_id: jobId, bucket } };
    try {
      await this.buckets.updateOne(filter, update, { upsert: true });
    } catch (error) {
      // Two appends creating one bucket at once: the loser's upsert collides; the bucket exists now.
      // (FerretDB reports that collision as error 1 rather than 11000.)
      if (!(error instanceof MongoServerError && (error.code === 11000 || /duplicate/i.test(error.message)))) throw error;
      await this.buckets.updateOne(filter, { $push: { events: record } });
    }
  }

  /** The job's events after `afterSeq` in order, at most `limit`: one lookup per bucket touched. */
  private async read(jobId: string, afterSeq: number, limit: number): Promise<EventRecord[]> {
    const out: EventRecord[] = [];
    for (let bucket = bucketOf(afterSeq + 1); out.length < limit; bucket++) {
      const found = await this.buckets.findOne({ _id: bucketId(jobId, bucket) });
      if (!found) break;
      // Concurrent appends may have pushed out of order.
      const events = found.events.filter((e) => e.seq > afterSeq).sort((a, b) => a.seq - b.seq);
      out.push(...events.slice(0, limit - out.length));
      if (found.events.length < BUCKET_SIZE) break;
    }
    return out;
  }

  /** The sequence number of event `id` of this job (400 when it is not one of its events). */
  private async seqOf(jobId: string, id: string): Promise<number> {
    const seq = seqOfId(id);
    const bucket = seq === null ? null : await this.buckets.findOne({ _id: bucketId(jobId, bucketOf(seq)) });
    if (seq === null || !bucket?.events.some((e) => e.id === id)) throw badRequest(`after: no event with id ${id} in this job`);
    return seq;
  }

  async hasStarted(jobId: string): Promise<boolean> {
    return (await this.streams.findOne({ _id: jobId }))?.started ?? false;
  }

  async hasEnded(jobId: string): Promise<boolean> {
    return (await this.streams.findOne({ _id: jobId }))?.terminal ?? false;
  }

  async list(jobId: string, options: { after?: string; limit: number }): Promise<Page<JobEvent>> {
    const afterSeq = options.after ? await this.seqOf(jobId, options.after) : 0;
    const rows = await this.read(jobId, afterSeq, options.limit + 1);
    return { items: rows.slice(0, options.limit).map(toEvent), hasMore: rows.length > options.limit };
  }

  /**
   * Replays events after `after`, then follows new ones until the terminal event (or the stream is
   * deleted, or the signal aborts). Woken by in-process appends; polls slowly for other processes'.
   */
  async *watch(jobId: string, after: string | undefined, signal: AbortSignal): AsyncGenerator<JobEvent> {
    let seq = after ? await this.seqOf(jobId, after) : 0;
    while (!signal.aborted) {
      const wake = this.nextAppend(jobId, signal);
      const batch = await this.read(jobId, seq, 100);
      for (const record of batch) {
        yield toEvent(record);
        seq = record.seq;
        if (TERMINAL.has(record.type)) return wake.cancel();
      }
      if (batch.length === 100) {
        wake.cancel();
        continue;
      }
      if (!(await this.streams.findOne({ _id: jobId }))) return wake.cancel();
      await wake.promise;
    }
  }

  async deleteForJobs(jobIds: string[]): Promise<number> {
    if (jobIds.length === 0) return 0;
    const deleted = (await this.buckets.deleteMany({ job_id: { $in: jobIds } })).deletedCount;
    await this.streams.deleteMany({ _id: { $in: jobIds } });
    for (const jobId of jobIds) this.appended.emit(jobId);
    return deleted;
  }

  async countForJobs(jobIds: string[]): Promise<number> {
    return (await this.buckets.countDocuments({ job_id: { $in: jobIds } })) + (await this.streams.countDocuments({ _id: { $in: jobIds } }));
  }

  private nextAppend(jobId: string, signal: AbortSignal): { promise: Promise<void>; cancel: () => void } {
    let done: () => void = () => {};
    const promise = new Promise<void>((resolve) => {
      done = resolve;
    });
    const timer = setTimeout(() => cancel(), FALLBACK_POLL_MS);
    const cancel = () => {
      clearTimeout(timer);
      this.appended.off(jobId, cancel);
      signal.removeEventListener("abort", cancel);
      done();
    };
    this.appended.on(jobId, cancel);
    signal.addEventListener("abort", cancel);
    return { promise, cancel };
  }

  private async explainRefusal(jobId: string, type: EventType): Promise<ApiError> {
    const stream = await this.streams.findOne({ _id: jobId });
    if (!stream) return notFound(`training job ${jobId} has no event stream`);
    if (stream.terminal) return new EventInvariantError(`training job ${jobId} has already ended; no ${type} event may follow`);
    if (type === "training_started") return new EventInvariantError(`training job ${jobId} has already started`);
    return new EventInvariantError(`training job ${jobId} has not started; training_started must come before ${type}`);
  }
}

function checkData(type: EventType, data: JsonObject): void {
  if (!EVENT_TYPES.includes(type)) throw new EventInvariantError(`unknown event type ${String(type)}`);
  if (type === "gradient_step") {
    for (const [name, value] of Object.entries(data)) {
      if (typeof value !== "number" || !Number.isFinite(value)) {
        throw new EventInvariantError(`gradient_step data must hold only finite numbers; ${name} is ${JSON.stringify(value)}`);
      }
    }
  }
  if (type === "training_started" && data.num_sequences !== undefined && !Number.isInteger(data.num_sequences)) {
    throw new EventInvariantError("training_started data.num_sequences must be an integer");
  }
  if (type === "training_failed" && data.error_message !== undefined && typeof data.error_message !== "string") {
    throw new EventInvariantError("training_failed data.error_message must be a string");
  }
}

function toEvent(record: EventRecord): JobEvent {
  return { id: record.id, type: record.type, data: JSON.parse(record.data_json) as JsonObject };
}
