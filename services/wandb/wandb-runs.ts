// Runs as the W&B API sees them: `wandb.init(id=...)` names a run of an entity's project. The
// service's tracking runs are these runs: a model's run answers to its own id and to the model's
// name (ART resumes `id=model.name`), so what the SDK logs lands in the history the console and
// `/v1/preview/runs/{id}/metrics` show. Other ids make runs of their own (no model).
import { badRequest, conflict } from "../core/errors.js";
import { type ModelRegistry, type RunRecord, Runs } from "../models/index.js";
import { historyMetrics, summaryNumbers } from "./history-rows.js";
import type { RunAttributes, WandbRunRecord, WandbRunStates } from "./run-state.js";

export interface WandbRun {
  run: RunRecord;
  /** The W&B bookkeeping; null until the SDK first touched the run. */
  state: WandbRunRecord | null;
}

/** W&B run ids: letters, digits, '-', '_' and '.' (the SDK refuses others before sending). */
const RUN_ID = /^[A-Za-z0-9._-]{1,128}$/;

export class WandbRuns {
  constructor(
    private readonly runs: Runs,
    private readonly states: WandbRunStates,
    private readonly registry: ModelRegistry,
  ) {}

  /** The run `id` of the caller's project, or null. */
  async find(entity: string, project: string, id: string): Promise<WandbRun | null> {
    const own = await this.runs.find(id);
    let run = own && own.entity === entity && own.project === project ? own : null;
    if (!run) {
      const model = await this.registry.findByName(entity, project, id);
      if (model) run = await this.runs.find(model.run_id);
    }
    if (!run) return null;
    return { run, state: await this.states.find(run._id) };
  }

  /** `upsertBucket`: the run, created when new, with the attributes the SDK sent. */
  async upsert(entity: string, project: string, id: string | null, attributes: RunAttributes): Promise<{ found: WandbRun; inserted: boolean }> {
    const runId = id ?? Runs.newRunId();
    if (!RUN_ID.test(runId)) throw badRequest(`run id "${runId}" may hold only letters, digits, '-', '_' and '.' (at most 128)`);
    let found = await this.find(entity, project, runId);
    let inserted = false;
    if (!found) {
      const taken = await this.runs.find(runId);
      if (taken) throw conflict(`run id "${runId}" is already used by another project; choose another id`);
      await this.runs.ensure({ _id: runId, entity, project, name: attributes.display_name ?? runId, model_id: null });
      found = { run: (await this.runs.find(runId)) as RunRecord, state: null };
      inserted = true;
    }
    const state = await this.states.upsert(found.run._id, { entity, project }, attributes);
    return { found: { run: found.run, state }, inserted: inserted || found.state === null };
  }

  /**
   * One file-stream request: new history lines go into the run's metric history (a retried request
   * repeats lines already counted: those are skipped by their offset), the summary and the exit
   * into the W&B record.
   */
  async recordStream(
    found: WandbRun,
    stream: { history: { offset: number; lines: string[] } | null; events: string[]; logLines: number; summary: string | null; exitCode: number | null },
  ): Promise<void> {
    const counted = found.state?.history_line_count ?? 0;
    const fresh = stream.history ? stream.history.lines.slice(Math.max(0, counted - stream.history.offset)) : [];
    for (const { step, split, values } of historyMetrics(fresh)) await this.runs.append(found.run._id, step, split, values);
    if (stream.summary !== null) await this.runs.mergeSummary(found.run._id, summaryNumbers(stream.summary));
    if (!found.state) await this.states.upsert(found.run._id, { entity: found.run.entity, project: found.run.project }, {});
    await this.states.recordStream(found.run._id, { historyLines: fresh, eventsLines: stream.events, logLines: stream.logLines, summary: stream.summary, exitCode: stream.exitCode });
  }

  async deleteState(runId: string): Promise<void> {
    await this.states.delete(runId);
  }
}
