// The database's health for /v1/health: the embedded database's supervisor knows when it is
// restarting; the driver's monitoring knows whether any database (embedded or not) answers.
// Neither costs a round trip, so liveness probes stay cheap.
import type { EmbeddedDatabase } from "./launcher.js";
import type { Database } from "./mongo.js";

export interface DatabaseHealth {
  status: "ok" | "unreachable" | "restarting";
  kind: string;
  since: Date;
  restarts: number;
  error?: string;
}

export function databaseHealth(database: Database, embedded: EmbeddedDatabase | undefined): DatabaseHealth {
  const supervised = embedded?.status();
  const restarts = supervised?.restarts ?? 0;
  const kind = embedded?.kind ?? "external";
  if (supervised && supervised.state !== "running") {
    return { status: "restarting", kind, since: supervised.since, restarts, ...(supervised.lastError ? { error: supervised.lastError } : {}) };
  }
  const reach = database.reachability();
  return {
    status: reach.reachable ? "ok" : "unreachable",
    kind,
    since: reach.since,
    restarts,
    ...(reach.error ? { error: reach.error } : {}),
  };
}
