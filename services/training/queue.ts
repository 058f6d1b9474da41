// The training-job queue as the rest of the service sees it. Jobs live in `training_jobs`; the
// worker that claims them arrives with the training-jobs issue.
import type { Collection, Db } from "mongodb";

export interface TrainingJobRecord {
  _id: string;
  model_id: string;
  status: "queued" | "running" | "succeeded" | "failed";
}

export class TrainingQueue {
  private readonly jobs: Collection<TrainingJobRecord>;

  constructor(db: Db) {
    this.jobs = db.collection<TrainingJobRecord>("training_jobs");
  }

  async ensureIndexes(): Promise<void> {
    await this.jobs.createIndex({ status: 1 });
    await this.jobs.createIndex({ model_id: 1 });
  }

  async depth(): Promise<{ queued: number; running: number }> {
    const [queued, running] = await Promise.all([
      this.jobs.countDocuments({ status: "queued" }),
      this.jobs.countDocuments({ status: "running" }),
    ]);
    return { queued, running };
  }
}
