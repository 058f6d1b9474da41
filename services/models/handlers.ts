// Models service. Registry, checkpoints and trajectory logs arrive with their own issue; until then
// those RPCs answer `unimplemented` (after full request validation by the gateway).
import { create } from "@bufbuild/protobuf";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { SystemCheckResponseSchema, type CheckResult } from "../../gen/srl/v1/system_pb.js";
import { unauthenticated, unavailable } from "../core/errors.js";
import type { Database } from "../store/mongo.js";
import { principalKey } from "../gateway/auth/authenticate.js";
import { defineHandlers } from "../gateway/pipeline.js";
import type { TrainingQueue } from "../training/queue.js";

export interface ModelsDeps {
  database: Database;
  baseModels: () => string[];
  trainingQueue: TrainingQueue;
}

export function modelsHandlers(deps: ModelsDeps) {
  return defineHandlers(Models, {
    listBaseModels: () => ({ models: deps.baseModels() }),
    health: () => ({ status: "ok" }),
    getCurrentEntity: (_request, context) => {
      const principal = context.values.get(principalKey);
      if (!principal) throw unauthenticated("Not authenticated");
      return { entity: principal.entity, keyPrefix: principal.keyPrefix };
    },
    systemCheck: async () => {
      const database = await timed(async () => {
        await deps.database.ping();
        return {};
      });
      const cpuQueue = database.success ? await timed(() => deps.trainingQueue.depth()) : skipped("database unavailable");
      const report = create(SystemCheckResponseSchema, {
        api: true,
        database,
        cpuQueue,
        // No GPU engine on this deployment: nothing is queued there, and nothing can fail.
        gpuQueue: { success: true, duration: 0, errors: [], queued: 0, running: 0 },
      });
      if (!database.success || !cpuQueue.success) {
        throw unavailable("system check failed", { schema: SystemCheckResponseSchema, message: report });
      }
      return report;
    },
  });
}

type CheckInit = Pick<CheckResult, "success" | "duration" | "errors"> & Partial<Pick<CheckResult, "queued" | "running">>;

async function timed(check: () => Promise<{ queued?: number; running?: number }>): Promise<CheckInit> {
  const started = performance.now();
  try {
    const extra = await check();
    return { success: true, duration: seconds(started), errors: [], ...extra };
  } catch (error) {
    return { success: false, duration: seconds(started), errors: [error instanceof Error ? error.message : String(error)] };
  }
}

function skipped(reason: string): CheckInit {
  return { success: false, duration: 0, errors: [reason] };
}

function seconds(started: number): number {
  return Math.round(performance.now() - started) / 1000;
}
