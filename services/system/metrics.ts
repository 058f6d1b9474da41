// The database and the training jobs for /metrics, read at scrape time: a ping (up and its round
// trip) and the jobs per entity, type and status as the database holds them, so jobs claimed by
// workers in other processes (`npm run worker`) count too.
import { instruments, type ScrapeSource } from "../core/metrics/index.js";
import type { TrainingJobs } from "../jobs/index.js";
import type { Database, DatabaseHealth } from "../store/index.js";

export function systemScrapeSource(deps: { database: Database; jobs: TrainingJobs; databaseHealth: () => DatabaseHealth }): ScrapeSource {
  return async () => {
    instruments.databaseRestarts.set(deps.databaseHealth().restarts);
    let up = false;
    try {
      // A scrape must answer even when the database does not: a short deadline.
      instruments.databasePing.set(await deps.database.ping(1_000));
      up = true;
    } catch {
      instruments.databasePing.reset();
    }
    instruments.databaseUp.set(up ? 1 : 0);
    if (!up) return;
    const counts = await deps.jobs.countsByState();
    instruments.trainingJobs.reset();
    for (const { entity, type, status, count } of counts) instruments.trainingJobs.set({ entity, type, status }, count);
  };
}
