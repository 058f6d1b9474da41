// Requests per second per entity, as a token bucket: an entity may send `burst` requests at once,
// then `perSecond` on average. Hosted APIs limit each key this way (OpenAI's and W&B's 429s); here
// it keeps one tenant's flood of cheap calls from taking the gateway's one event loop from others.
import { overloaded } from "../../core/errors.js";
import { TokenBuckets } from "../../core/token-buckets.js";

export class EntityRateLimit {
  private readonly buckets: TokenBuckets;

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.buckets = new TokenBuckets(burst, perSecond / 1000);
  }

  /** Takes one request from the entity's bucket, or throws 429 saying when the next one fits. */
  charge(entity: string): void {
    if (this.perSecond <= 0) return;
    const taken = this.buckets.take(entity, 1, this.now());
    if (!taken.ok) {
      throw overloaded(`rate limit: more than ${this.perSecond} requests per second from this entity (ENTITY_REQUESTS_PER_SECOND=${this.perSecond}, ENTITY_REQUEST_BURST=${this.burst}); retry after ${taken.retryAfterSeconds} s`, taken.retryAfterSeconds);
    }
  }
}
