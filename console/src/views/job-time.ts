// How long a job trained: start to end, or so far while it runs.
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { duration } from "../format.js";

export function jobDuration(job: TrainingJob, now = Date.now()): string {
  if (!job.trainingStart) return "—";
  const start = Date.parse(job.trainingStart);
  if (job.trainingEnd) return duration(Date.parse(job.trainingEnd) - start);
  return job.status === "running" ? `${duration(now - start)} so far` : "—";
}

export function isTerminal(status: string): boolean {
  return status === "succeeded" || status === "failed";
}
