// Runs as the W&B API sees them: `wandb.init(id=...)` names a run of an entity's project. The
// service's tracking runs are these runs: a model's run answers to its own id and to the model's
// name (ART resumes `id=model.name`), so what the SDK logs lands in the history the console and
// `/v1/preview/runs/{id}/metrics` show. Other ids make runs of their own (no model).
//
// W&B run ids are scoped per entity: two entities may both use `id="x"`, and neither learns of the
// other's. The service's runs share one id space, so the run of the entity that comes second gets
// a service id derived from its entity and W&B id (the W&B record maps the name to it). Within one
// entity an id stays one run across projects, as it was: another project's is a conflict.
import { createHash } from "node:crypto";
import { badRequest, conflict } from "../core/errors.js";
import { type ModelRegistry, type RunRecord, Runs } from "../models/index.js";
import { isDuplicateKey } from "../store/index.js";
import { FIELD_LIMITS, FieldTooLarge, checkBytes } from "./field-limits.js";
import { parseHistoryRow } from "./history-json.js";
import { historyMetrics, summaryNumbers } from "./history-rows.js";
import type { WandbRunHistory } from "./run-history.js";
import type { RunAttributes, WandbRunRecord, WandbRunStates } from "./run-state.js";

export interface WandbRun {
  run: RunRecord;
  /** The W&B bookkeeping; null until the SDK first touched the run. */
  state: WandbRunRecord | null;
  /** The id the entity's W&B API knows the run by (WandbRunRecord.run_name). */
  name: string;
}

/** W&B run ids: letters, digits, '-', '_' and '.' (the SDK refuses others before sending). */
const RUN_ID = /^[A-Za-z0-9._-]{1,128}$/;

export class WandbRuns {
  /** The runs' whole history rows (run-history.ts). */
  readonly history: WandbRunHistory;

  constructor(
    private readonly runs: Runs,
    private readonly states: WandbRunStates,
    private readonly registry: ModelRegistry,
  ) {
    this.history = states.history;
  }

  /** The run `id` of the caller's project, or null. */
  async find(entity: string, project: string, id: string): Promise<WandbRun | null> {
    // A run the entity's W&B API made or touched, by the name it knows.
    const named = await this.states.findByName(entity, id);
    if (named && named.project === project) {
      const run = await this.runs.find(named._id);
      if (run && run.entity === entity) return { run, state: named, name: id };
    }
    // A run by its service id (a model's run, or one whose W&B record is not written yet).
    const own = await this.runs.find(id);
    if (own && own.entity === entity && own.project === project) return { run: own, state: await this.states.find(own._id), name: own._id };
    // A model's run by the model's name.
    const model = await this.registry.findByName(entity, project, id);
    const run = model ? await this.runs.find(model.run_id) : null;
    return run ? { run, state: await this.states.find(run._id), name: run._id } : null;
  }

  /** The runs of the entity's project the W&B API knows (made or touched by the SDK), newest first. */
  async list(entity: string, project: string, offset: number, limit: number): Promise<WandbRun[]> {
    return this.withRuns(await this.states.list(entity, project, offset, limit));
  }

  count(entity: string, project: string): Promise<number> {
    return this.states.count(entity, project);
  }

  /** `useArtifact`: the run used the artifact version `artifactId`. */
  async recordUse(found: WandbRun, artifactId: string): Promise<void> {
    if (!found.state) await this.states.upsert(found.run._id, { entity: found.run.entity, project: found.run.project, runName: found.name }, {});
    await this.states.recordUse(found.run._id, artifactId);
  }

  /** The entity's runs that used the artifact version `artifactId`, the first `limit`. */
  async usersOf(entity: string, artifactId: string, limit: number): Promise<WandbRun[]> {
    return this.withRuns(await this.states.usersOf(entity, artifactId, limit));
  }

  /** The runs of W&B records (a record whose run is gone is left out). */
  private async withRuns(states: readonly WandbRunRecord[]): Promise<WandbRun[]> {
    const found: WandbRun[] = [];
    for (const state of states) {
      const run = await this.runs.find(state._id);
      if (run) found.push({ run, state, name: state.run_name });
    }
    return found;
  }

  /** `upsertBucket`: the run, created when new, with the attributes the SDK sent. */
  async upsert(entity: string, project: string, id: string | null, attributes: RunAttributes): Promise<{ found: WandbRun; inserted: boolean }> {
    const runId = id ?? Runs.newRunId();
    if (!RUN_ID.test(runId)) throw badRequest(`run id "${runId}" may hold only letters, digits, '-', '_' and '.' (at most 128)`);
    checkAttributes(attributes);
    let found = await this.find(entity, project, runId);
    let inserted = false;
    if (!found) {
      found = await this.create(entity, project, runId, attributes);
      inserted = true;
    }
    let state: WandbRunRecord;
    try {
      state = await this.states.upsert(found.run._id, { entity, project, runName: found.name }, attributes);
    } catch (error) {
      // The name is the entity's run of another project now (a concurrent create won).
      if (isDuplicateKey(error)) throw conflict(`run id "${runId}" is already used by another project; choose another id`);
      throw error;
    }
    return { found: { ...found, state }, inserted: inserted || found.state === null };
  }

  /** A new run `runId` of the entity's project, under the first free service id. */
  private async create(entity: string, project: string, runId: string, attributes: RunAttributes): Promise<WandbRun> {
    const sameEntity = async (): Promise<boolean> => (await this.states.findByName(entity, runId)) !== null || (await this.runs.find(runId))?.entity === entity;
    if (await sameEntity()) throw conflict(`run id "${runId}" is already used by another project; choose another id`);
    // The W&B id itself when no run has it; else (another entity's) one derived from entity and
    // id, the same on every retry, so a create cut short is completed, not duplicated.
    for (const serviceId of [runId, derivedRunId(entity, runId)]) {
      await this.runs.ensure({ _id: serviceId, entity, project, name: attributes.display_name ?? runId, model_id: null });
      const run = await this.runs.find(serviceId);
      if (run && run.entity === entity && run.project === project) return { run, state: null, name: runId };
      if (run && run.entity === entity) break; // the entity's own run of another project (a race with another create)
    }
    if (await sameEntity()) throw conflict(`run id "${runId}" is already used by another project; choose another id`);
    throw conflict(`run id "${runId}" cannot be used; choose another id`);
  }

  /**
   * One file-stream request: new history lines are kept whole (run-history.ts) and their numbers go
   * into the run's metric history (a retried request repeats lines already counted: those are
   * skipped by their offset), the summary and the exit into the W&B record. Sizes are checked
   * before anything is stored.
   */
  async recordStream(
    found: WandbRun,
    stream: { history: { offset: number; lines: string[] } | null; events: string[]; logLines: number; summary: string | null; exitCode: number | null },
  ): Promise<void> {
    const counted = found.state?.history_line_count ?? 0;
    const fresh = stream.history ? stream.history.lines.slice(Math.max(0, counted - stream.history.offset)) : [];
    for (const line of fresh) checkBytes("a history row (one line of wandb-history.jsonl)", line, FIELD_LIMITS.historyRowBytes);
    for (const line of stream.events) checkBytes("a line of wandb-events.jsonl", line, FIELD_LIMITS.eventsRowBytes);
    checkBytes("the run summary (wandb-summary.json)", stream.summary, FIELD_LIMITS.summaryBytes);
    const points = historyMetrics(fresh);
    const summary = stream.summary !== null ? summaryNumbers(stream.summary) : {};
    checkMetricNames(found.run, [...points.flatMap((point) => Object.keys(point.values)), ...Object.keys(summary)]);
    const historyRows = fresh.map(parseHistoryRow);
    await this.history.append(found.run._id, counted, fresh, historyRows);
    for (const { step, split, values } of points) await this.runs.append(found.run._id, step, split, values);
    if (stream.summary !== null) await this.runs.mergeSummary(found.run._id, summary);
    if (!found.state) await this.states.upsert(found.run._id, { entity: found.run.entity, project: found.run.project, runName: found.name }, {});
    await this.states.recordStream(found.run._id, { historyLines: fresh, historyRows, eventsLines: stream.events, logLines: stream.logLines, summary: stream.summary, exitCode: stream.exitCode });
  }

  async deleteState(runId: string): Promise<void> {
    await this.states.delete(runId);
  }
}

/** A service run id for another entity's W&B id: `w-` and 24 characters of a hash of both. */
function derivedRunId(entity: string, runId: string): string {
  return `w-${createHash("sha256").update(`${entity}\0${runId}`).digest("base64url").slice(0, 24)}`;
}

function checkAttributes(attributes: RunAttributes): void {
  checkBytes("the run config", attributes.config, FIELD_LIMITS.configBytes);
  checkBytes("the run summary", attributes.summary, FIELD_LIMITS.summaryBytes);
  for (const key of ["display_name", "notes", "group", "job_type", "state"] as const) checkBytes(`the run's ${key}`, attributes[key], FIELD_LIMITS.textBytes);
  if (attributes.tags) {
    if (attributes.tags.length > FIELD_LIMITS.tags) throw new FieldTooLarge(`a run has at most ${FIELD_LIMITS.tags} tags (${attributes.tags.length} given)`);
    for (const tag of attributes.tags) checkBytes("a tag", tag, FIELD_LIMITS.tagBytes);
  }
}

/**
 * Metric names become keys of the run's summary document (services/models/runs.ts): their number
 * and length are bounded so that the document stays far below the database's 16 MiB.
 */
function checkMetricNames(run: RunRecord, names: readonly string[]): void {
  const known = new Set(Object.keys(run.summary));
  const added = new Set<string>();
  for (const name of names) {
    if (name.length > FIELD_LIMITS.metricNameChars) throw new FieldTooLarge(`metric name "${name.slice(0, 64)}..." is ${name.length} characters; at most ${FIELD_LIMITS.metricNameChars} are stored`);
    const key = summaryKey(name);
    if (!known.has(key)) added.add(key);
  }
  if (known.size + added.size > FIELD_LIMITS.metricsPerRun) {
    throw new FieldTooLarge(`a run holds at most ${FIELD_LIMITS.metricsPerRun} distinct metrics; this run has ${known.size} and the request adds ${added.size}`);
  }
}

/** The summary key of a metric name, as services/models/runs.ts `fieldKey` makes it. */
function summaryKey(name: string): string {
  const key = name.replace(/\./g, "_").replace(/^\$/, "_").replace(/^\s+|\s+$/g, (edge) => "_".repeat(edge.length));
  return key === "" ? "_" : key;
}
