// Named points where a test makes the process fail on purpose (FAILPOINTS=name=action,...), to
// prove that what was written before the point is recovered from: `crash` kills the process
// (SIGKILL: no handler, no cleanup, as a machine losing power), `error` throws once, as a database
// timeout would (the next pass through the point goes on). Unset (always, outside such tests) a
// point costs one map lookup.

export type FailpointAction = "crash" | "error";

const armed = new Map<string, FailpointAction>();

/** Parses FAILPOINTS (config.ts); throws on a malformed entry. */
export function parseFailpoints(raw: string | undefined): Map<string, FailpointAction> {
  const points = new Map<string, FailpointAction>();
  for (const entry of (raw ?? "").split(",").map((part) => part.trim()).filter(Boolean)) {
    const [name, action] = entry.split("=");
    if (!name || (action !== "crash" && action !== "error")) throw new Error(`FAILPOINTS entry "${entry}" must be name=crash or name=error`);
    points.set(name, action);
  }
  return points;
}

export function armFailpoints(points: ReadonlyMap<string, FailpointAction>): void {
  armed.clear();
  for (const [name, action] of points) armed.set(name, action);
}

export class FailpointError extends Error {
  constructor(name: string) {
    super(`failpoint ${name} fired`);
    this.name = "FailpointError";
  }
}

/** Fails here when the point is armed. */
export function failpoint(name: string): void {
  const action = armed.get(name);
  if (action === "crash") process.kill(process.pid, "SIGKILL");
  if (action === "error") {
    armed.delete(name);
    throw new FailpointError(name);
  }
}
