// AdamW and clipping against hand-worked torch semantics.
import { describe, expect, it } from "vitest";
import { AdamW } from "./adamw.js";
import { clipGradNorm, globalNorm } from "./clip.js";

describe("AdamW", () => {
  it("applies decoupled weight decay and bias-corrected moments like torch.optim.AdamW", () => {
    const p = new Float32Array([1, -2]);
    const opt = new AdamW({ beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1 });
    const params = new Map([["w", p]]);
    // Step 1: m̂ = g, v̂ = g², so the Adam part is lr·sign(g); decay multiplies p by 1 - lr·wd first.
    opt.step(params, new Map([["w", new Float32Array([0.5, -4])]]), 0.1);
    expect(p[0]).toBeCloseTo(1 * 0.99 - 0.1, 6);
    expect(p[1]).toBeCloseTo(-2 * 0.99 + 0.1, 6);
    // Step 2 on p[0] with g = -0.2, worked by hand.
    const m = 0.9 * 0.05 + 0.1 * -0.2;
    const v = 0.99 * 0.0025 + 0.01 * 0.04;
    const expected = 0.89 * 0.99 - (0.1 * (m / (1 - 0.81))) / (Math.sqrt(v / (1 - 0.9801)) + 1e-8);
    opt.step(params, new Map([["w", new Float32Array([-0.2, 0])]]), 0.1);
    expect(p[0]).toBeCloseTo(expected, 6);
    expect(opt.stepCount).toBe(2);
  });

  it("with no weight decay and lr 0 leaves parameters unchanged", () => {
    const p = new Float32Array([0.3]);
    new AdamW({ beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0 }).step(new Map([["w", p]]), new Map([["w", new Float32Array([1])]]), 0);
    expect(p[0]).toBeCloseTo(0.3, 7);
  });
});

describe("clipGradNorm", () => {
  it("returns the norm before clipping and scales by max / (norm + 1e-6) only when above max", () => {
    const grads = new Map([
      ["a", new Float32Array([3])],
      ["b", new Float32Array([4])],
    ]);
    expect(clipGradNorm(grads, 1)).toBeCloseTo(5, 6);
    expect(grads.get("a")![0]).toBeCloseTo(3 / (5 + 1e-6), 6);
    expect(globalNorm(grads)).toBeCloseTo(1, 5);
    expect(clipGradNorm(grads, 10)).toBeCloseTo(1, 5);
    expect(grads.get("b")![0]).toBeCloseTo(4 / (5 + 1e-6), 6);
  });
});
