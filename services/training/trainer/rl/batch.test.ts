import { init } from "@jax-js/jax";
import { beforeAll, describe, expect, it } from "vitest";
import { rlLossData } from "./batch.js";

beforeAll(async () => {
  await init("wasm");
});

describe("rlLossData", () => {
  it("shifts per-token values left by one (position t predicts token t + 1) and pads", () => {
    const rows = [
      { assistantMask: [false, false, true, true], oldLogprobs: [null, null, -0.5, -0.25] },
      { assistantMask: [false, true], oldLogprobs: [null, null] },
    ];
    const data = rlLossData(rows, [{ advantage: 1.5, weight: 0.5 }, { advantage: -1, weight: 2 }], 5, { refLogprobs: [[-1, -2, -3], [-4]] });
    expect(data.mask.js()).toEqual([
      [0, 1, 1, 0, 0],
      [1, 0, 0, 0, 0],
    ]);
    expect(data.oldLogprobs.js()).toEqual([
      [NaN, -0.5, -0.25, NaN, NaN],
      [NaN, NaN, NaN, NaN, NaN],
    ]);
    expect(data.advantages.js()).toEqual([1.5, -1]);
    expect(data.weights.js()).toEqual([0.5, 2]);
    expect(data.refLogprobs!.js()).toEqual([
      [-1, -2, -3, 0, 0],
      [-4, 0, 0, 0, 0],
    ]);
    expect(data.originalLogprobs).toBeUndefined();
  });

  it("puts recomputed logprobs in oldLogprobs and the sampler's in originalLogprobs", () => {
    const data = rlLossData([{ assistantMask: [false, true, true], oldLogprobs: [null, -0.5, -0.75] }], [{ advantage: 1, weight: 1 }], 3, { recomputedOldLogprobs: [new Float32Array([-0.25, -1])] });
    expect(data.oldLogprobs.js()).toEqual([[-0.25, -1, 0]]);
    expect(data.originalLogprobs!.js()).toEqual([[-0.5, -0.75, NaN]]);
  });
});
