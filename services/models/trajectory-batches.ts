// The trajectory groups stored for a model, as batches: each `/log` call (its groups are kept in
// the trajectories collection) and each RL training job (its input is kept whole in the blob store).
// Both lists are merged newest first; a model has one batch per log call or job, so the merge is
// done here over small records (no group is read to list batches).
import type { JsonObject } from "@bufbuild/protobuf";
import { badRequest, notFound } from "../core/errors.js";
import type { Page } from "../store/index.js";
import type { TrainingJobRecord, TrainingJobs } from "../jobs/index.js";
import type { Checkpoints } from "./checkpoints.js";
import type { SizedGroup, TrajectoryLog } from "./trajectory-log.js";

export interface TrajectoryBatchView {
  id: string;
  source: "log" | "training_job";
  split: string;
  step: number;
  numGroups: number;
  createdAt: Date;
  trainingJob?: { id: string; status: string; producedStep: number | null };
}

export interface StoredGroupView {
  id: string;
  index: number;
  group: JsonObject;
}

/** JSON bytes of groups in one page (past the first group). */
const PAGE_BYTES = 16 * 1024 * 1024;

interface BatchHead {
  id: string;
  createdAt: Date;
  log?: { split: string; step: number };
  job?: TrainingJobRecord;
}

export class TrajectoryBatches {
  constructor(
    private readonly log: TrajectoryLog,
    private readonly jobs: TrainingJobs,
    private readonly checkpoints: Checkpoints,
  ) {}

  async list(modelId: string, options: { split?: string; after?: string; limit: number }): Promise<Page<TrajectoryBatchView>> {
    const wantsJobs = options.split === undefined || options.split === "train";
    const [logged, jobs] = await Promise.all([this.log.batchesOf(modelId, options.split), wantsJobs ? this.jobs.rlJobsOf(modelId) : Promise.resolve([])]);
    const heads: BatchHead[] = [
      ...logged.map((record) => ({ id: record.batch_id, createdAt: record.created_at, log: { split: record.split, step: record.step } })),
      ...jobs.map((job) => ({ id: job._id, createdAt: job.created_at, job })),
    ].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    let start = 0;
    if (options.after !== undefined) {
      const position = heads.findIndex((head) => head.id === options.after);
      if (position < 0) throw badRequest(`after: no trajectory batch with id ${options.after} in this list`);
      start = position + 1;
    }
    const page = heads.slice(start, start + options.limit);
    const latestStep = page.some((head) => head.job && head.job.step === null) ? ((await this.checkpoints.latest(modelId))?.step ?? 0) : 0;
    return { items: await Promise.all(page.map((head) => this.view(head, latestStep))), hasMore: heads.length > start + options.limit };
  }

  /**
   * The groups of one of the model's batches, from after the group id `after` on: at most `limit`,
   * and at most PAGE_BYTES of JSON (one group always), so a page of large groups stays sendable.
   */
  async groups(modelId: string, batchId: string, options: { after?: string; limit: number }): Promise<Page<StoredGroupView>> {
    const from = options.after === undefined ? 0 : afterPosition(batchId, options.after);
    const job = await this.jobs.rlJobOf(modelId, batchId);
    let source: AsyncIterable<SizedGroup> | Iterable<SizedGroup>;
    if (job) {
      source = sizedFrom(await this.jobs.inputOf(job), from); // the job's input is one document: read whole
    } else if (await this.log.hasBatch(modelId, batchId)) {
      source = this.log.groupsFrom(batchId, from, options.limit + 1); // one more tells whether more exist
    } else {
      throw notFound(`trajectory batch ${batchId} not found for model ${modelId}`);
    }
    const items: StoredGroupView[] = [];
    let bytes = 0;
    for await (const sized of source) {
      if (items.length === options.limit || (items.length > 0 && bytes + sized.bytes > PAGE_BYTES)) return { items, hasMore: true };
      bytes += sized.bytes;
      items.push({ id: `${batchId}:${sized.index}`, index: sized.index, group: sized.group() });
    }
    return { items, hasMore: false };
  }

  private async view(head: BatchHead, latestStep: number): Promise<TrajectoryBatchView> {
    if (head.log) {
      return { id: head.id, source: "log", split: head.log.split, step: head.log.step, numGroups: await this.log.countOfBatch(head.id), createdAt: head.createdAt };
    }
    const job = head.job as TrainingJobRecord;
    // A job trains from the model's latest checkpoint and makes the next step; until it has made
    // one, the latest checkpoint now is where it starts.
    const step = job.step !== null ? job.step - 1 : latestStep;
    const numGroups = job.input_groups ?? (await this.jobs.inputOf(job)).length;
    return {
      id: job._id,
      source: "training_job",
      split: "train",
      step,
      numGroups,
      createdAt: job.created_at,
      trainingJob: { id: job._id, status: job.status, producedStep: job.step },
    };
  }
}

function* sizedFrom(groups: JsonObject[], from: number): Generator<SizedGroup> {
  for (let index = from; index < groups.length; index++) {
    const group = groups[index] as JsonObject;
    yield { index, bytes: JSON.stringify(group).length, group: () => group };
  }
}

function afterPosition(batchId: string, after: string): number {
  const match = /^(.*):(\d+)$/.exec(after);
  if (!match || match[1] !== batchId) throw badRequest(`after: ${after} is not a group id of batch ${batchId} (expected ${batchId}:<index>)`);
  return Number(match[2]) + 1;
}
