// The comparison that catches batched kernels computing something else than the one-token ones.
import { describe, expect, it } from "vitest";
import { compareLogits } from "./logit-comparison.js";

const logits = (values: number[]) => new Map(values.map((value, token) => [token, value]));

describe("compareLogits", () => {
  const reference = logits([10, 2, -3, 0.5, 7]);

  it("accepts the small differences of another summation order", () => {
    const result = compareLogits(reference, logits([10.05, 1.98, -3.04, 0.52, 6.97]));
    expect(result.ok).toBe(true);
    expect(result.relativeMaxDiff).toBeCloseTo(0.05 / 13, 6);
  });

  it("refuses unrelated logits, non-finite ones and a different vocabulary", () => {
    expect(compareLogits(reference, logits([0, 9, 4, -2, 1])).ok).toBe(false);
    expect(compareLogits(reference, logits([10, 2, NaN, 0.5, 7])).ok).toBe(false);
    expect(compareLogits(reference, logits([10, 2, -3, 0.5])).ok).toBe(false);
    expect(compareLogits(new Map(), new Map()).ok).toBe(false);
  });
});
