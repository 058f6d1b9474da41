import { describe, expect, it } from "vitest";
import { ApiError } from "../../core/errors.js";
import { EntityRateLimit } from "./entity-rate-limit.js";

describe("EntityRateLimit", () => {
  it("lets a burst through, then refuses with a retry time, and refills at the rate", () => {
    let now = 0;
    const limit = new EntityRateLimit(10, 3, () => now);
    for (let i = 0; i < 3; i++) limit.charge("a");
    let refused: unknown;
    try {
      limit.charge("a");
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).kind).toBe("overloaded");
    expect((refused as ApiError).message).toContain("ENTITY_REQUESTS_PER_SECOND=10");
    expect((refused as ApiError).retryAfterSeconds).toBe(1);
    // Another entity has its own bucket.
    expect(() => limit.charge("b")).not.toThrow();
    now += 100; // one request's worth at 10/s
    expect(() => limit.charge("a")).not.toThrow();
    expect(() => limit.charge("a")).toThrow(ApiError);
  });

  it("does nothing when the rate is 0", () => {
    const limit = new EntityRateLimit(0, 1, () => 0);
    for (let i = 0; i < 1000; i++) limit.charge("a");
  });
});
