// The jax forward pass against an independent float64 reference, and the jax gradients of the SFT
// loss against central differences of that reference, on a very small llama (GQA, untied head;
// the forward check also runs a tied-head, multi-head variant).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { numpy as np } from "@jax-js/jax";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTinyModel } from "../../../weights/tiny-model.js";
import { Prng } from "../../../weights/prng.js";
import { rlLossData } from "../rl/batch.js";
import { resolveRlConfig } from "../rl/config.js";
import { rlLossSpec } from "../rl/loss-spec.js";
import { referenceLoss } from "../rl/reference-loss.js";
import { SFT_LOSS } from "../sft/loss.js";
import { CausalLm } from "./causal-lm.js";
import { initLora, type LoraWeights } from "./lora.js";
import { loadReference, referenceLogprobs, referenceSftLoss, type ReferenceModel } from "./reference.js";

let dir: string;
let lm: CausalLm;
let ref: ReferenceModel;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-grad-"));
  const path = join(dir, "small.gguf");
  await makeTinyModel({ path, seed: 5, layers: 2, embedding: 32, heads: 4, kvHeads: 2, ff: 48, contextLength: 64, type: "f32" });
  lm = await CausalLm.load(path);
  ref = await loadReference(path);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A LoRA with random, non-zero B (with B = 0 every A-gradient would vanish). */
function randomLora(): LoraWeights {
  const lora = initLora(lm.base, { rank: 4, alpha: 8, targets: ["q", "k", "v", "o", "gate", "up", "down"] }, 9);
  const rng = new Prng(3, "b");
  for (const t of lora.tensors.values()) for (let i = 0; i < t.b.length; i++) t.b[i] = rng.normal() * 0.3;
  return lora;
}

const rows = [
  { tokens: [766, 72, 101, 108, 108, 111, 767, 10, 766, 97, 115, 32, 104], labelMask: [0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1] },
  { tokens: [766, 84, 104, 101, 32, 99, 97, 116], labelMask: [0, 0, 1, 1, 1, 1, 1] },
];

function sftBatch(T: number) {
  const mask = new Float32Array(rows.length * T);
  rows.forEach((r, i) => mask.set(r.labelMask, i * T));
  const n = rows.reduce((a, r) => a + r.labelMask.reduce((x, y) => x + y, 0), 0);
  return {
    inputs: lm.inputs(rows.map((r) => r.tokens), T),
    data: { mask: np.array(mask).reshape([rows.length, T]), invCount: np.array(1 / n) },
  };
}

describe("trainer forward and gradients", () => {
  it("matches a float64 reference forward pass with a tied head and no GQA", async () => {
    const path = join(dir, "tied.gguf");
    await makeTinyModel({ path, seed: 6, layers: 1, embedding: 32, heads: 2, ff: 40, contextLength: 64, type: "f16", tiedOutput: true });
    const tied = await CausalLm.load(path);
    expect(tied.config.tiedOutput).toBe(true);
    const tiedRef = await loadReference(path);
    const [mine] = await tied.logprobs(null, [rows[0]!.tokens]);
    const expected = referenceLogprobs(tiedRef, null, rows[0]!.tokens);
    expected.forEach((v, t) => expect(Math.abs(v - mine![t]!)).toBeLessThan(1e-4));
  });

  it("matches a float64 reference forward pass (base and with LoRA)", async () => {
    const lora = randomLora();
    for (const l of [null, lora]) {
      const mine = await lm.logprobs(l, rows.map((r) => r.tokens), 16);
      rows.forEach((r, i) => {
        const expected = referenceLogprobs(ref, l, r.tokens);
        expect(mine[i]!.length).toBe(expected.length);
        let max = 0;
        expected.forEach((v, t) => (max = Math.max(max, Math.abs(v - mine[i]![t]!))));
        expect(max).toBeLessThan(1e-4);
      });
    }
  });

  it("gives SFT-loss gradients equal to central differences of the reference", async () => {
    const lora = randomLora();
    const { inputs, data } = sftBatch(16);
    const result = await lm.valueAndGrad(SFT_LOSS, lora, inputs, data);
    expect(result.loss).toBeCloseTo(referenceSftLoss(ref, lora, rows), 4);

    const rng = new Prng(11, "coords");
    let checked = 0;
    for (const [name, t] of lora.tensors) {
      for (const which of ["a", "b"] as const) {
        const values = t[which];
        const grad = result.grads.get(name)![which];
        for (let k = 0; k < 2; k++) {
          const i = Math.floor(rng.uniform() * values.length);
          const orig = values[i]!;
          values[i] = orig + 1e-3;
          const up = values[i]! - orig;
          const lossUp = referenceSftLoss(ref, lora, rows);
          values[i] = orig - 1e-3;
          const down = orig - values[i]!;
          const lossDown = referenceSftLoss(ref, lora, rows);
          values[i] = orig;
          const fd = (lossUp - lossDown) / (up + down);
          expect(Math.abs(grad[i]! - fd), `${name}.${which}[${i}]: jax ${grad[i]} vs fd ${fd}`).toBeLessThan(2e-3 * Math.abs(fd) + 2e-5);
          checked++;
        }
      }
    }
    expect(checked).toBe(2 * 7 * 2 * 2);
  });

  it("gives RL-loss gradients (CISPO and PPO, through rl/batch's shift) equal to central differences", async () => {
    const lora = randomLora();
    const tokens = rows[0]!.tokens;
    const assistantMask = tokens.map((_, t) => t >= 5 && t !== 8);
    // Sampler logprobs near the model's own, so ratios sit inside the clip range (a smooth loss).
    const base = referenceLogprobs(ref, lora, tokens);
    const oldLogprobs = tokens.map((_, t) => (assistantMask[t] && t !== 6 ? base[t - 1]! + 0.05 * Math.sin(t) : null));
    const plan = { advantage: 1.3, weight: 0.9 };
    const settings: JsonObject[] = [{}, { loss_fn: "ppo", epsilon: 0.5 }];
    for (const sent of settings) {
      const config = resolveRlConfig(sent);
      const data = rlLossData([{ assistantMask, oldLogprobs }], [plan], 16);
      const result = await lm.valueAndGrad(rlLossSpec(config), lora, lm.inputs([tokens], 16), data);
      // The reference takes token-aligned inputs shifted by hand: position t predicts token t+1.
      const shifted = <T,>(v: readonly T[]) => v.slice(1);
      const lossAt = (lp: Float64Array) =>
        referenceLoss(
          { newLogprobs: [Array.from(lp)], detachedNewLogprobs: [Array.from(base)], oldLogprobs: [shifted(oldLogprobs)], advantages: [plan.advantage], weights: [plan.weight], mask: [shifted(assistantMask).map(Number)] },
          config,
        ).loss;
      expect(Math.abs(result.loss - lossAt(base))).toBeLessThan(1e-5 * Math.abs(lossAt(base)) + 1e-6);
      const rng = new Prng(12, JSON.stringify(sent));
      for (const name of ["blk.0.attn_q.weight", "blk.1.ffn_down.weight", "blk.1.attn_v.weight"]) {
        for (const which of ["a", "b"] as const) {
          const values = lora.tensors.get(name)![which];
          const i = Math.floor(rng.uniform() * values.length);
          const orig = values[i]!;
          values[i] = orig + 1e-3;
          const up = values[i]! - orig;
          const lossUp = lossAt(referenceLogprobs(ref, lora, tokens));
          values[i] = orig - 1e-3;
          const down = orig - values[i]!;
          const lossDown = lossAt(referenceLogprobs(ref, lora, tokens));
          values[i] = orig;
          const fd = (lossUp - lossDown) / (up + down);
          const g = result.grads.get(name)![which][i]!;
          expect(Math.abs(g - fd), `${JSON.stringify(sent)} ${name}.${which}[${i}]: jax ${g} vs fd ${fd}`).toBeLessThan(2e-3 * Math.abs(fd) + 2e-5);
        }
      }
    }
  });
});
