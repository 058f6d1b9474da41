// GraphQL objects of runs (W&B's `Run`, which its mutations call a bucket) and projects. Fields
// that take arguments are methods: graphql-js's default resolver calls them with the arguments.
import type { WandbRun } from "./wandb-runs.js";

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
  return { id: Buffer.from(`Entity:${entity}`).toString("base64"), name: entity, organization: null, user: null };
}

/** `name` is the id the SDK asked by (a model's run answers to the model's name too). */
export function runObject(found: WandbRun, name: string, project: () => unknown) {
  const { run, state } = found;
  const wandbConfig = (): string | null => {
    const config = parseObject(state?.config ?? "{}");
    const internal = config._wandb;
    const value = typeof internal === "object" && internal !== null && "value" in internal ? (internal as { value: unknown }).value : null;
    return typeof value === "object" && value !== null ? JSON.stringify(value) : null;
  };
  return {
    id: runStorageId(run.entity, run.project, name),
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
    historyKeys: null,
    user: null,
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
