// Workers take entities in turn: one entity's backlog of queued jobs delays another entity's
// first job by at most one job. Runs the real queue (TrainingJobs) on the test database, in a
// database of its own so other files' queued jobs do not take turns too.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { inject } from "vitest";
import { EventLog } from "../../services/events/event-log.js";
import { TrainingJobs } from "../../services/jobs/training-jobs.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalBlobStore } from "../../services/store/blob-store/local-blob-store.js";
import { connectDatabase } from "../../services/store/mongo.js";
import { TEST_DATABASE_TIMEOUT_MS } from "../support/db-timeout.js";

async function withOwnDatabase<T>(use: (jobs: TrainingJobs) => Promise<T>): Promise<T> {
  const database = await connectDatabase(inject("mongoUri"), `fairness_${randomUUID().slice(0, 8)}`, { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  const blobDir = await mkdtemp(join(tmpdir(), "srl-fairness-blobs-"));
  try {
    const jobs = new TrainingJobs(database.db, new LocalBlobStore(blobDir), new EventLog(database.db));
    await jobs.ensureIndexes();
    return await use(jobs);
  } finally {
    await database.db.dropDatabase().catch(() => undefined);
    await database.close();
    await rm(blobDir, { recursive: true, force: true });
  }
}

const rlJob = (jobs: TrainingJobs, entity: string, modelId: string) => jobs.createRl({ entity, modelId, groups: [{ trajectories: [] }], experimentalConfig: {} });

describe("training queue fairness", () => {
  it("gives another entity's first job the next turn, whatever the backlog ahead of it", async () => {
    await withOwnDatabase(async (jobs) => {
      // Entity A queues 12 jobs over 4 models, then B queues one.
      for (let i = 0; i < 12; i++) await rlJob(jobs, "entity-a", `a-model-${i % 4}`);
      const bJob = await rlJob(jobs, "entity-b", "b-model");
      expect(await jobs.unfinishedOf("entity-a")).toBe(12);
      // One worker: A's oldest job runs first (A was there first), then B's, then A's again.
      const first = await jobs.claim("worker", 60_000);
      expect(first?.entity).toBe("entity-a");
      await jobs.finish(first!._id, "worker", 1);
      const second = await jobs.claim("worker", 60_000);
      expect(second?._id).toBe(bJob._id);
      await jobs.finish(second!._id, "worker", 1);
      const third = await jobs.claim("worker", 60_000);
      expect(third?.entity).toBe("entity-a");
    });
  });

  it("with several workers, the entity running fewest jobs goes first", async () => {
    await withOwnDatabase(async (jobs) => {
      for (let i = 0; i < 6; i++) await rlJob(jobs, "entity-a", `a-model-${i}`);
      const a1 = await jobs.claim("w1", 60_000);
      const a2 = await jobs.claim("w2", 60_000);
      expect([a1?.entity, a2?.entity]).toEqual(["entity-a", "entity-a"]);
      const bJobs = [await rlJob(jobs, "entity-b", "b-model-1"), await rlJob(jobs, "entity-b", "b-model-2")];
      // A runs two jobs, B none: B's go next, on two different workers, before A's third.
      const next = [await jobs.claim("w3", 60_000), await jobs.claim("w4", 60_000)];
      expect(next.map((job) => job?._id)).toEqual(bJobs.map((job) => job._id));
      expect((await jobs.claim("w5", 60_000))?.entity).toBe("entity-a");
    });
  });
});
