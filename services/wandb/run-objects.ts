// GraphQL objects of runs (W&B's `Run`, which its mutations call a bucket), their projects and
// users. Fields that take arguments are methods: graphql-js's default resolver calls them with the
// arguments.
import { createHash } from "node:crypto";
import type { ResolverDeps } from "./resolver-deps.js";
import { runHistoryFields } from "./run-history-fields.js";
import type { WandbRun } from "./wandb-runs.js";

/** A GraphQL object id as W&B writes them: base64 of `Type:key` (opaque to the SDK). */
export const b64 = (text: string) => Buffer.from(text).toString("base64");

/** W&B's storage id of a run: opaque to the SDK, which sends it back as `upsertBucket(id:)`. */
export function runStorageId(entity: string, project: string, runId: string): string {
  return Buffer.from(`Run:v1:${runId}:${project}:${entity}`).toString("base64");
}

/** The run id inside a storage id, when it is one of ours for this entity. */
export function runIdOfStorageId(storageId: string, entity: string): { runId: string; project: string } | null {
  const match = /^Run:v1:([^:]+):([^:]+):(.+)$/.exec(Buffer.from(storageId, "base64").toString("utf8"));
  return match && match[3] === entity ? { runId: match[1] as string, project: match[2] as string } : null;
}

export function entityObject(entity: string) {
  return { id: b64(`Entity:${entity}`), name: entity, organization: null, user: null };
}

/** The entity's user: each entity is one user here (W&B's viewer, a run's user). */
export function userObject(entity: string) {
  return { id: b64(`User:${entity}`), name: entity, username: entity, email: null, admin: false, flags: "{}", entity, defaultEntity: entityObject(entity), deletedAt: null };
}

/**
 * W&B's numeric project id (`Project.internalId`, `Run.projectId`): the SDK parses it with int().
 * Derived from the names (31 bits, a GraphQL Int), the same on every server of the database.
 */
export function projectInternalId(entity: string, project: string): number {
  return createHash("sha256").update(`${entity}\0${project}`).digest().readUInt32BE(0) >>> 1;
}

/** A project as other objects link to it (the root's `project` adds its runs and artifacts). */
export function projectRef(view: { entity: string; project: string }) {
  return {
    id: b64(`Project:${view.entity}/${view.project}`),
    internalId: String(projectInternalId(view.entity, view.project)),
    name: view.project,
    entityName: view.entity,
    entity: entityObject(view.entity),
    readOnly: false,
  };
}

/** `name` is the id the SDK asked by (a model's run answers to the model's name too). */
export function runObject(deps: ResolverDeps, found: WandbRun, name: string, project: () => unknown) {
  const { run, state } = found;
  const wandbConfig = (): string | null => {
    const config = parseObject(state?.config ?? "{}");
    const internal = config._wandb;
    const value = typeof internal === "object" && internal !== null && "value" in internal ? (internal as { value: unknown }).value : null;
    return typeof value === "object" && value !== null ? JSON.stringify(value) : null;
  };
  return {
    id: runStorageId(run.entity, run.project, name),
    projectId: projectInternalId(run.entity, run.project),
    name,
    displayName: state?.display_name ?? run.name,
    description: state?.notes ?? null,
    notes: state?.notes ?? null,
    tags: state?.tags ?? [],
    config: state?.config ?? "{}",
    summaryMetrics: state?.summary ?? JSON.stringify(run.summary),
    systemMetrics: "{}",
    wandbConfig: ({ keys }: { keys?: string[] | null }) => {
      const all = wandbConfig();
      if (all === null || !keys) return all;
      const picked = Object.fromEntries(Object.entries(parseObject(all)).filter(([key]) => keys.includes(key)));
      return JSON.stringify(picked);
    },
    sweepName: null,
    state: state?.state ?? "finished",
    group: state?.group ?? null,
    jobType: state?.job_type ?? null,
    commit: null,
    readOnly: false,
    createdAt: run.created_at.toISOString(),
    heartbeatAt: (state?.updated_at ?? run.created_at).toISOString(),
    stopped: false,
    historyLineCount: state?.history_line_count ?? 0,
    eventsLineCount: state?.events_line_count ?? 0,
    logLineCount: state?.log_line_count ?? 0,
    historyTail: JSON.stringify(state?.history_tail ?? []),
    eventsTail: JSON.stringify(state?.events_tail ?? []),
    ...runHistoryFields(deps, found),
    user: userObject(run.entity),
    project,
  };
}

export function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
