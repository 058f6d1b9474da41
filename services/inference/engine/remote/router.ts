// Which replica runs a choice: one that is up and not tried yet for this choice; among those, one
// not restarting, then one that already holds the adapter (or is being restarted to load it), then
// the least loaded, ties taken in turn.
import { unavailable } from "../../../core/errors.js";
import type { AdapterRef, Backend } from "./backend.js";
import type { Replica } from "./replica.js";

export class Router {
  private turn = 0;

  constructor(
    private readonly base: string,
    private readonly replicas: readonly Replica[],
    private readonly backend: Backend,
    /** Adapters a replica is being restarted to load (llama-server replicas this service runs). */
    private readonly loading: (replica: Replica) => ReadonlySet<string>,
  ) {}

  /** The replica for the next attempt; a 503 naming every replica's trouble when none is left. */
  pick(adapter: AdapterRef | null, tried: ReadonlySet<Replica>): Replica {
    const candidates = this.replicas.filter((replica) => replica.up && !tried.has(replica));
    if (candidates.length === 0) {
      const why = this.replicas.map((replica) => `${replica.url}: ${tried.has(replica) ? replica.lastError || "failed for this request" : replica.lastError || "down"}`).join("; ");
      throw unavailable(`no replica of ${this.base} can take the request (${why}); retry shortly`);
    }
    const score = (replica: Replica) => {
      const holds = adapter !== null && (this.backend.holds(replica, adapter) || this.loading(replica).has(adapter.key));
      return [replica.restarting && !holds ? 1 : 0, adapter !== null && !holds ? 1 : 0, replica.inflight] as const;
    };
    const start = this.turn++ % candidates.length;
    const rotated = [...candidates.slice(start), ...candidates.slice(0, start)];
    let best = rotated[0] as Replica;
    let bestScore = score(best);
    for (const replica of rotated.slice(1)) {
      const s = score(replica);
      if (s[0] < bestScore[0] || (s[0] === bestScore[0] && (s[1] < bestScore[1] || (s[1] === bestScore[1] && s[2] < bestScore[2])))) {
        best = replica;
        bestScore = s;
      }
    }
    return best;
  }
}
