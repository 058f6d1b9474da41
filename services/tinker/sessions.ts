// Tinker sessions (one per SDK ServiceClient) and sampling sessions (one per SamplingClient): who
// opened them, what they sample. A session of another entity is reported as absent.
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Collection, Db } from "mongodb";
import { notFound } from "../core/errors.js";

export interface SessionRecord {
  _id: string;
  entity: string;
  tags: string[];
  user_metadata: JsonObject | null;
  sdk_version: string;
  project_id: string | null;
  display_name: string | null;
  created_at: Date;
  last_heartbeat_at: Date;
  /** Set when the client closed it (`success`, `errored` or `interrupted`). */
  finished_at?: Date | null;
  finish_reason?: string | null;
}

export interface SamplingSessionRecord {
  _id: string;
  entity: string;
  session_id: string;
  /** What it samples: a base model name, or a sampler checkpoint's tinker:// path. */
  base_model: string;
  model_path: string | null;
  created_at: Date;
}

export class TinkerSessions {
  private readonly sessions: Collection<SessionRecord>;
  private readonly samplingSessions: Collection<SamplingSessionRecord>;

  constructor(db: Db) {
    this.sessions = db.collection<SessionRecord>("tinker_sessions");
    this.samplingSessions = db.collection<SamplingSessionRecord>("tinker_sampling_sessions");
  }

  async ensureIndexes(): Promise<void> {
    await this.sessions.createIndex({ entity: 1, created_at: -1 });
    await this.sessions.createIndex({ finished_at: 1, last_heartbeat_at: 1 });
    await this.samplingSessions.createIndex({ entity: 1, session_id: 1 });
  }

  async create(entity: string, fields: Pick<SessionRecord, "tags" | "user_metadata" | "sdk_version" | "project_id" | "display_name">): Promise<SessionRecord> {
    const now = new Date();
    const record: SessionRecord = { _id: `session-${randomUUID()}`, entity, ...fields, created_at: now, last_heartbeat_at: now, finished_at: null, finish_reason: null };
    await this.sessions.insertOne(record);
    return record;
  }

  async getOwned(entity: string, sessionId: string): Promise<SessionRecord> {
    const record = await this.sessions.findOne({ _id: sessionId });
    if (!record || record.entity !== entity) throw notFound(`The session \`${sessionId}\` does not exist.`);
    return record;
  }

  async heartbeat(entity: string, sessionId: string): Promise<void> {
    await this.updateOwned(entity, sessionId, { last_heartbeat_at: new Date() });
  }

  /** Sets fields of the caller's session in one round trip (404 as getOwned). */
  private async updateOwned(entity: string, sessionId: string, fields: Partial<SessionRecord>): Promise<void> {
    const { matchedCount } = await this.sessions.updateOne({ _id: sessionId, entity }, { $set: fields });
    if (matchedCount === 0) throw notFound(`The session \`${sessionId}\` does not exist.`);
  }

  /** Open sessions whose last heartbeat is older than `since`. */
  async silentSince(since: Date): Promise<SessionRecord[]> {
    return this.sessions.find({ last_heartbeat_at: { $lt: since }, finished_at: null }).limit(100).toArray();
  }

  async finish(entity: string, sessionId: string, reason: string): Promise<void> {
    await this.updateOwned(entity, sessionId, { finished_at: new Date(), finish_reason: reason });
  }

  /** The entity's sessions, newest first, by offset. */
  async list(entity: string, offset: number, limit: number): Promise<SessionRecord[]> {
    return this.sessions.find({ entity }).sort({ created_at: -1, _id: 1 }).skip(offset).limit(limit).toArray();
  }

  async samplingOf(entity: string, sessionId: string): Promise<SamplingSessionRecord[]> {
    return this.samplingSessions.find({ entity, session_id: sessionId }).toArray();
  }

  async createSampling(entity: string, sessionId: string, target: { baseModel: string; modelPath: string | null }): Promise<SamplingSessionRecord> {
    const record: SamplingSessionRecord = { _id: `sampler-${randomUUID()}`, entity, session_id: sessionId, base_model: target.baseModel, model_path: target.modelPath, created_at: new Date() };
    await this.samplingSessions.insertOne(record);
    return record;
  }

  async getSampling(entity: string, samplingSessionId: string): Promise<SamplingSessionRecord> {
    const record = await this.samplingSessions.findOne({ _id: samplingSessionId });
    if (!record || record.entity !== entity) throw notFound(`The sampling session \`${samplingSessionId}\` does not exist.`);
    return record;
  }
}
