// Token buckets by key (an entity, a presented key): each holds up to `capacity` tokens and refills
// at `perMs` tokens a millisecond; taking more than it holds is refused with the wait until it
// could be paid. The one rate-limit primitive: requests per entity (gateway) and GraphQL cost per
// entity (wandb) are both this.

interface Bucket {
  tokens: number;
  at: number;
}

export type Taken = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Buckets kept; past it the least recently used is forgotten (it starts full again). */
const MAX_BUCKETS = 100_000;

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly capacity: number,
    private readonly perMs: number,
  ) {}

  /** Takes `amount` from `key`'s bucket at time `now` (ms); nothing is taken when it cannot pay. */
  take(key: string, amount: number, now: number): Taken {
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, at: now };
    const tokens = Math.min(this.capacity, bucket.tokens + Math.max(0, now - bucket.at) * this.perMs);
    // Re-inserted, so the map's order is least recently used first.
    this.buckets.delete(key);
    if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value as string);
    if (tokens < amount) {
      this.buckets.set(key, { tokens, at: now });
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((amount - tokens) / this.perMs / 1000)) };
    }
    this.buckets.set(key, { tokens: tokens - amount, at: now });
    return { ok: true };
  }
}
