import { describe, expect, it } from "vitest";
import { FULL_THREADS_MIN_BYTES, singleTokenStepsTakeFewer, threadsFor, threadsForBatch } from "./threads.js";

describe("threadsFor", () => {
  it("takes ENGINE_THREADS when it is set", () => {
    expect(threadsFor(3, 2, 10)).toBe(3);
    expect(threadsFor(1, 16, 2 ** 34)).toBe(1);
  });
  it("gives a real model every math core, as llama.cpp itself would", () => {
    expect(threadsFor(0, 2, 92 * 2 ** 20)).toBe(2);
    expect(threadsFor(0, 8, FULL_THREADS_MIN_BYTES)).toBe(8);
  });
  it("leaves a core to the JavaScript work for a tiny model, keeping at least one thread", () => {
    expect(threadsFor(0, 2, 2 ** 20)).toBe(1);
    expect(threadsFor(0, 8, FULL_THREADS_MIN_BYTES - 1)).toBe(7);
    expect(threadsFor(0, 1, 2 ** 20)).toBe(1);
    expect(threadsFor(0, 0, 2 ** 20)).toBe(1);
  });
  it("runs a single-token decode step on one thread fewer, and batches of several tokens on all", () => {
    expect(threadsForBatch(1, 2)).toBe(1);
    expect(threadsForBatch(2, 2)).toBe(2);
    expect(threadsForBatch(40, 8)).toBe(8);
    expect(threadsForBatch(1, 1)).toBe(1);
  });
  it("does so where the threads are chosen here, or set to every core; a set count below leaves a core free and is used as it is", () => {
    expect(singleTokenStepsTakeFewer(0, 2)).toBe(true);
    expect(singleTokenStepsTakeFewer(2, 2)).toBe(true);
    expect(singleTokenStepsTakeFewer(3, 2)).toBe(true);
    expect(singleTokenStepsTakeFewer(1, 2)).toBe(false);
    expect(singleTokenStepsTakeFewer(4, 8)).toBe(false);
  });
});
