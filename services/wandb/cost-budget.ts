// The GraphQL cost budget of each entity: a token bucket per entity (in this process) that holds
// `capacity` cost units and refills at `capacity` per `windowMs`. A query takes its cost up front;
// one the bucket cannot pay is refused with the wait until it could (HTTP 429 with Retry-After),
// so one entity's heavy queries leave the others' within their own budgets.
import { TokenBuckets, type Taken } from "../core/token-buckets.js";

export interface CostBudgetSettings {
  /** Cost units an entity may spend per window (and hold at most, unspent). */
  capacity: number;
  windowMs: number;
}

export class CostBudget {
  private readonly buckets: TokenBuckets;

  constructor(settings: CostBudgetSettings) {
    this.buckets = new TokenBuckets(settings.capacity, settings.capacity / settings.windowMs);
  }

  /** Spends `cost` of `entity`'s budget; when it cannot, the seconds until it can (nothing is spent). */
  take(entity: string, cost: number, now = Date.now()): Taken {
    return this.buckets.take(entity, cost, now);
  }
}
