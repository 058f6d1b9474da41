import { describe, expect, it } from "vitest";
import { FairQueue, type FairWaiter } from "./fair-queue.js";

let arrivals = 0;
const waiter = (tenant: string, priority = 0): FairWaiter => ({ tenant, n: 1, priority, arrival: arrivals++ });

describe("FairQueue", () => {
  it("lets a lone entity fill the whole room, then refuses it naming the limit", () => {
    const queue = new FairQueue({ maxQueue: 4, maxQueuePerTenant: 4 });
    for (let i = 0; i < 4; i++) expect(queue.enqueue(waiter("a")).admitted).toBe(true);
    const refused = queue.enqueue(waiter("a"));
    expect(refused).toEqual({ admitted: false, reason: expect.stringContaining("ENGINE_MAX_QUEUE=4") });
    expect(queue.length).toBe(4);
  });

  it("makes room in a full queue for another entity by displacing the heaviest entity's newest waiter", () => {
    const queue = new FairQueue({ maxQueue: 4, maxQueuePerTenant: 4 });
    const flood = [waiter("a"), waiter("a"), waiter("a"), waiter("a")];
    for (const w of flood) queue.enqueue(w);
    const b = waiter("b");
    expect(queue.enqueue(b)).toEqual({ admitted: true, displaced: flood[3] });
    expect(queue.length).toBe(4);
    // Two entities holding equal shares: a newcomer of either is refused, nobody is displaced.
    queue.enqueue(waiter("b")); // displaces a's newest again: a 2, b 2
    expect(queue.enqueue(waiter("b")).admitted).toBe(false);
    expect(queue.enqueue(waiter("a")).admitted).toBe(false);
  });

  it("holds each entity to its own share when one is set", () => {
    const queue = new FairQueue({ maxQueue: 10, maxQueuePerTenant: 2 });
    expect(queue.enqueue(waiter("a")).admitted).toBe(true);
    expect(queue.enqueue(waiter("a")).admitted).toBe(true);
    expect(queue.enqueue(waiter("a"))).toEqual({ admitted: false, reason: expect.stringContaining("ENGINE_MAX_QUEUE_PER_ENTITY=2") });
    expect(queue.enqueue(waiter("b")).admitted).toBe(true);
  });

  it("gives the turn to the entity running fewest sequences, then to the earliest arrival", () => {
    const queue = new FairQueue({ maxQueue: 10, maxQueuePerTenant: 10 });
    const a1 = waiter("a");
    const a2 = waiter("a");
    const b1 = waiter("b");
    for (const w of [a1, a2, b1]) queue.enqueue(w);
    const running = new Map([["a", 8]]);
    const runningOf = (tenant: string) => running.get(tenant) ?? 0;
    expect(queue.next(runningOf)).toBe(b1);
    queue.remove(b1);
    running.set("b", 1);
    expect(queue.next(runningOf)).toBe(a1);
    running.set("a", 0);
    expect(queue.next(runningOf)).toBe(a1);
    // An entity at its share of the sequences waits even when it is its turn.
    expect(queue.next(runningOf, (w) => w.tenant !== "a")).toBeUndefined();
  });

  it("keeps priority scheduling first (lower priority value first), fairness within a priority", () => {
    const queue = new FairQueue({ maxQueue: 10, maxQueuePerTenant: 10 });
    const late = waiter("a", 1);
    const urgent = waiter("a", -5);
    const other = waiter("b", 1);
    for (const w of [late, other, urgent]) queue.enqueue(w);
    const runningOf = (tenant: string) => (tenant === "a" ? 3 : 0);
    expect(queue.next(runningOf)).toBe(urgent);
    queue.remove(urgent);
    expect(queue.next(runningOf)).toBe(other);
  });
});
