// The training worker: claims queued jobs (one per model at a time, in creation order) and runs
// them. Started inside the server by default; `npm run worker` runs it alone, and several workers
// may share one database. A job whose worker stops heartbeating is taken over when its lease
// expires, up to `maxAttempts`, then failed.
import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { runJob, type WorkerDeps } from "./run-job.js";

export interface WorkerOptions {
  leaseMs: number;
  pollMs: number;
  maxAttempts: number;
}

export class TrainingWorker {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly shutdown = new AbortController();
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly deps: WorkerDeps,
    private readonly options: WorkerOptions,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** A job was created in this process: look now rather than at the next poll. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Stops claiming; a running job is handed back to the queue. */
  async stop(): Promise<void> {
    this.shutdown.abort();
    this.wakeUp?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { jobs, events, log } = this.deps;
    log.info("training worker started", { worker: this.id, lease_ms: this.options.leaseMs });
    while (!this.shutdown.signal.aborted) {
      try {
        const job = await jobs.claim(this.id, this.options.leaseMs);
        if (!job) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, this.options.pollMs);
            this.wakeUp = () => (clearTimeout(timer), resolve());
          });
          this.wakeUp = undefined;
          continue;
        }
        if (job.attempts > this.options.maxAttempts) {
          const message = `the job's worker stopped responding ${job.attempts - 1} times; giving up`;
          if (await jobs.fail(job._id, message, this.id)) {
            if (!(await events.hasEnded(job._id))) await events.append(job._id, "training_failed", { error_message: message });
          }
          continue;
        }
        log.info("training job claimed", { job_id: job._id, model_id: job.model_id, type: job.type, attempt: job.attempts });
        await runJob(this.deps, job, { workerId: this.id, leaseMs: this.options.leaseMs, maxAttempts: this.options.maxAttempts, shutdown: this.shutdown.signal });
      } catch (error) {
        log.error("training worker error", { error });
        await new Promise((resolve) => setTimeout(resolve, this.options.pollMs));
      }
    }
    log.info("training worker stopped", { worker: this.id });
  }
}
