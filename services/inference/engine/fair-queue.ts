// The waiting room of one base model, shared fairly between entities. A lone entity may fill it,
// but as soon as another entity waits, turns go to the entity with the fewest sequences running,
// and a full room makes room for a newcomer by refusing the newest request of the entity holding
// the most places. Generation cannot be pre-empted, so the engine also keeps one entity from
// holding every sequence (engine.ts): a newcomer starts at once instead of waiting for a
// stranger's long generation to end.

export interface FairWaiter {
  tenant: string;
  /** Sequences it needs (the request's n). */
  n: number;
  /** Lower runs first (vLLM's priority scheduling); 0 for first-come-first-served models. */
  priority: number;
  arrival: number;
}

export interface FairQueueLimits {
  /** Places in the room (ENGINE_MAX_QUEUE). */
  maxQueue: number;
  /** Places one entity may hold (ENGINE_MAX_QUEUE_PER_ENTITY; the whole room when as large). */
  maxQueuePerTenant: number;
}

export type Enqueued<W> = { admitted: true; displaced: W | null } | { admitted: false; reason: string };

export class FairQueue<W extends FairWaiter> {
  private readonly waiting: W[] = [];

  constructor(private readonly limits: FairQueueLimits) {}

  get length(): number {
    return this.waiting.length;
  }

  /**
   * Takes a place for `waiter`, or says which limit refuses it. A full room takes it anyway when
   * another entity holds more places than the newcomer would: that entity's newest waiter is
   * displaced (the caller refuses it as overloaded).
   */
  enqueue(waiter: W): Enqueued<W> {
    const mine = this.countOf(waiter.tenant);
    if (mine >= this.limits.maxQueuePerTenant && this.limits.maxQueuePerTenant < this.limits.maxQueue) {
      return { admitted: false, reason: `${mine} of this entity's requests are already waiting for this model (ENGINE_MAX_QUEUE_PER_ENTITY=${this.limits.maxQueuePerTenant})` };
    }
    let displaced: W | null = null;
    if (this.waiting.length >= this.limits.maxQueue) {
      const [heaviest, held] = this.heaviestTenant();
      if (heaviest === null || held <= mine + 1) {
        return { admitted: false, reason: `${this.waiting.length} requests are waiting for this model (ENGINE_MAX_QUEUE=${this.limits.maxQueue})` };
      }
      displaced = this.newestOf(heaviest);
      this.remove(displaced);
    }
    this.waiting.push(waiter);
    return { admitted: true, displaced };
  }

  remove(waiter: W): boolean {
    const index = this.waiting.indexOf(waiter);
    if (index < 0) return false;
    this.waiting.splice(index, 1);
    return true;
  }

  /**
   * Whose turn it is: by priority, then the entity running fewest sequences, then arrival; only
   * waiters `mayRun` allows (its entity below its share of the sequences).
   */
  next(runningOf: (tenant: string) => number, mayRun: (waiter: W) => boolean = () => true): W | undefined {
    let best: W | undefined;
    let bestRunning = 0;
    for (const waiter of this.waiting) {
      if (!mayRun(waiter)) continue;
      const running = runningOf(waiter.tenant);
      if (
        best === undefined ||
        waiter.priority < best.priority ||
        (waiter.priority === best.priority && (running < bestRunning || (running === bestRunning && waiter.arrival < best.arrival)))
      ) {
        best = waiter;
        bestRunning = running;
      }
    }
    return best;
  }

  private countOf(tenant: string): number {
    let count = 0;
    for (const waiter of this.waiting) if (waiter.tenant === tenant) count++;
    return count;
  }

  private heaviestTenant(): [string | null, number] {
    const counts = new Map<string, number>();
    for (const waiter of this.waiting) counts.set(waiter.tenant, (counts.get(waiter.tenant) ?? 0) + 1);
    let heaviest: string | null = null;
    let held = 0;
    for (const [tenant, count] of counts) if (count > held) [heaviest, held] = [tenant, count];
    return [heaviest, held];
  }

  private newestOf(tenant: string): W {
    let newest: W | undefined;
    for (const waiter of this.waiting) if (waiter.tenant === tenant && (newest === undefined || waiter.arrival > newest.arrival)) newest = waiter;
    return newest as W;
  }
}
