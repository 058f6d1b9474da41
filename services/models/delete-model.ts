// Deleting a model removes everything it owns: its unfinished jobs are cancelled first (watchers
// see their terminal `training_failed`), then events, jobs, logged trajectories, checkpoints,
// artifacts linked to it and the tracking run; the model row goes last, so an interrupted delete
// can simply be repeated. The blobs those named (adapters, job inputs, large groups, files) are
// removed by the blob collector once nothing names them (BLOB_GRACE_MS).
import type { Artifacts } from "../artifacts/index.js";
import type { EventLog } from "../events/index.js";
import type { TrainingJobs } from "../jobs/index.js";
import type { Checkpoints } from "./checkpoints.js";
import type { ModelRecord, ModelRegistry } from "./registry.js";
import type { Runs } from "./runs.js";
import type { TrajectoryLog } from "./trajectory-log.js";

/** What another service keeps per model (a folder models cannot import): deleted with the model, before its row. */
export interface ModelDependent {
  deleteForModel(modelId: string): Promise<void>;
}

export class ModelDeletion {
  constructor(
    private readonly deps: {
      registry: ModelRegistry;
      checkpoints: Checkpoints;
      runs: Runs;
      trajectoryLog: TrajectoryLog;
      jobs: TrainingJobs;
      events: EventLog;
      artifacts: Artifacts;
      /** What other services keep per run (the W&B API's run record), deleted with the run. */
      wandbRunStates: { delete(runId: string): Promise<void> };
      /** Further per-model records the composition root registers (services/app/services.ts). */
      dependents?: readonly ModelDependent[];
    },
  ) {}

  async delete(model: ModelRecord): Promise<{ deletedCheckpoints: number; deletedRun: boolean }> {
    const { jobs, events, trajectoryLog, checkpoints, runs, registry, artifacts } = this.deps;
    await jobs.cancelForModel(model._id, "cancelled: the model was deleted");
    await events.deleteForJobs(await jobs.idsForModel(model._id));
    await jobs.deleteForModel(model._id);
    await trajectoryLog.deleteForModel(model._id);
    const deletedCheckpoints = await checkpoints.deleteAll(model._id);
    await artifacts.deleteForModel(model._id);
    const deletedRun = await runs.delete(model.run_id);
    await this.deps.wandbRunStates.delete(model.run_id);
    for (const dependent of this.deps.dependents ?? []) await dependent.deleteForModel(model._id);
    await registry.remove(model._id);
    return { deletedCheckpoints, deletedRun };
  }
}
