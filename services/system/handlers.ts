// The deployment's own RPCs (on the Models service in the contract): health from the database's
// last known state (no round trip), the caller's entity, and a system check that touches the
// database and the training queue.
import { create } from "@bufbuild/protobuf";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { SystemCheckResponseSchema, type CheckResult } from "../../gen/srl/v1/system_pb.js";
import { ApiError, unavailable } from "../core/errors.js";
import { defineHandlers, principalOf } from "../core/rpc/index.js";
import type { TrainingJobs } from "../jobs/index.js";
import type { Database, DatabaseHealth } from "../store/index.js";
import { readOperatorState } from "./operator-state.js";

export interface SystemDeps {
  database: Database;
  jobs: TrainingJobs;
  /** The database's state as last seen (no round trip): /v1/health reports it. */
  databaseHealth: () => DatabaseHealth;
  /** BOOTSTRAP_ENTITY: the entity whose keys may read the operator's state (as /metrics). */
  operatorEntity: string;
}

export function systemHandlers(deps: SystemDeps) {
  return defineHandlers(Models, {
    health: () => {
      const database = deps.databaseHealth();
      return {
        status: database.status === "ok" ? "ok" : "degraded",
        database: { ...database, since: database.since.toISOString() },
      };
    },

    getCurrentEntity: (_request, context) => {
      const principal = principalOf(context);
      return { entity: principal.entity, keyPrefix: principal.keyPrefix };
    },

    getOperatorState: async (_request, context) => {
      const principal = principalOf(context);
      // Entity labels name tenants: the same rule as /metrics without METRICS_TOKEN.
      if (principal.entity !== deps.operatorEntity) {
        throw new ApiError("permission_denied", `the engines' and queues' state is the operator's: only API keys of entity "${deps.operatorEntity}" (BOOTSTRAP_ENTITY) may read it; this key is of "${principal.entity}"`);
      }
      return readOperatorState();
    },

    systemCheck: async () => {
      const database = await timed(async () => {
        await deps.database.ping();
        return {};
      });
      const cpuQueue = database.success ? await timed(() => deps.jobs.depth()) : skipped("database unavailable");
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
