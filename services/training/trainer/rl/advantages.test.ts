// Spec §3 / §2.2-2.3 by hand, then as the loss sees them. Every row below has a 3-token prompt
// [1, 2, 3] and n trainable tokens; with new = old log-probs ρ = 1 and CISPO's per-token loss is
// -1·A·new·w, so at new = -1 a row's "mean" loss is A·w and the row-mean loss is mean_r(A_r·w_r)
// (the loss itself is tested in services/training/torch_trainer/tests/test_losses.py).
import { describe, expect, it } from "vitest";
import { groupAdvantages, planRlRows, type AdvantageConfig, type AdvantageRow } from "./advantages.js";
import { resolveRlConfig } from "./config.js";

const CONFIG: AdvantageConfig = resolveRlConfig({ scale_rewards: false });

function row(groupIndex: number, trajectoryIndex: number, n: number): AdvantageRow {
  const sampled = Array.from({ length: n }, (_, k) => 100 + 10 * groupIndex + trajectoryIndex + k);
  return {
    tokens: [1, 2, 3, ...sampled],
    assistantMask: [false, false, false, ...sampled.map(() => true)],
    oldLogprobs: [null, null, null, ...sampled.map(() => -1)],
    groupIndex,
    trajectoryIndex,
  };
}

/** CISPO's row-mean loss of the kept rows at new = old = -1: mean over rows of A·w. */
function rowMeanLoss(plans: ReturnType<typeof planRlRows>["rows"]): number {
  const kept = plans.filter((p) => p.kept);
  return kept.reduce((sum, p) => sum + p.advantage * p.weight, 0) / kept.length;
}

describe("groupAdvantages", () => {
  it("subtracts the mean and divides by the population std + 1e-6", () => {
    // μ = 0.5, σ = sqrt((0.25 + 0.25 + 0 + 0) / 4) = 0.35355339; 0.5 / 0.35355439 = 1.41420956
    const scaled = groupAdvantages([1, 0, 0.5, 0.5], true);
    [1.41420956, -1.41420956, 0, 0].forEach((v, i) => expect(scaled[i]).toBeCloseTo(v, 7));
    expect(groupAdvantages([1, 0, 0.5, 0.5], false)).toEqual([0.5, -0.5, 0, 0]);
    expect(groupAdvantages([3, 3], true)).toEqual([0, 0]);
  });

  it("treats rewards within 1e-12 of each other as equal (ART 0.5.23's zero-variance test)", () => {
    // Without the tolerance the 1e-13 spread would become advantages of ±(1e-13 / (5e-14 + 1e-6)).
    expect(groupAdvantages([1, 1 + 1e-13], true)).toEqual([0, 0]);
    expect(groupAdvantages([1, 1 + 1e-9], false)).not.toEqual([0, 0]);
    expect(planRlRows([row(0, 0, 1), row(0, 1, 1)], [[1, 1 + 1e-13]], CONFIG).skip).toBe("no_trainable_rows");
  });
});

// Groups: G0 rewards [1, 0, 0] with n = 1, 2, 3 tokens; G1 rewards [0, 4] with n = 2, 2.
// Weights: raw 1/n = [1, 1/2, 1/3, 1/2, 1/2]; token-mean Σ n·w / Σ n = 5 / 10 = 0.5 -> w = [2, 1, 2/3, 1, 1].
const GROUPS = [
  [1, 0, 0],
  [0, 4],
];
const ROWS = [row(0, 0, 1), row(0, 1, 2), row(0, 2, 3), row(1, 0, 2), row(1, 1, 2)];

const CASES = [
  {
    // A = [2/3, -1/3, -1/3, -2, 2]; mean|A|·w = (1·2/3·2 + 2·1/3·1 + 3·1/3·2/3 + 2·2 + 2·2) / 10 = 1.0666667
    // A / 1.0666667 = [0.625, -0.3125, -0.3125, -1.875, 1.875]; loss = (1.25 - 0.3125 - 0.2083333 - 1.875 + 1.875) / 5
    name: "scale_rewards off",
    config: CONFIG,
    advantages: [0.625, -0.3125, -0.3125, -1.875, 1.875],
    loss: 0.1458333,
  },
  {
    // G0: σ = sqrt(2/9) = 0.4714045 -> A = [1.4142106, -0.7071053, -0.7071053]; G1: σ = 2 -> ±0.9999995
    // mean|A|·w = (1.4142106·2 + 2·0.7071053 + 3·0.7071053·2/3 + 2·0.9999995 + 2·0.9999995) / 10 = 0.9656840
    // A = [1.4644652, -0.7322326, -0.7322326, -1.0355349, 1.0355349]; loss = (2.9289304 - 0.7322326 - 0.4881551) / 5
    name: "scale_rewards on",
    config: { ...CONFIG, scaleRewards: true },
    advantages: [1.4644652, -0.7322326, -0.7322326, -1.0355349, 1.0355349],
    loss: 0.3417083,
  },
  {
    // b = 0.5: negatives × 0.5 -> [2/3, -1/6, -1/6, -1, 2]; mean|A|·w = (4/3 + 1/3 + 1/3 + 2 + 4) / 10 = 0.8
    // A = [0.8333333, -0.2083333, -0.2083333, -1.25, 2.5]; loss = (1.6666667 - 0.2083333 - 0.1388889 - 1.25 + 2.5) / 5
    name: "advantage_balance +0.5",
    config: { ...CONFIG, advantageBalance: 0.5 },
    advantages: [0.8333333, -0.2083333, -0.2083333, -1.25, 2.5],
    loss: 0.5138889,
  },
  {
    // b = -0.5: positives × 0.5 -> [1/3, -1/3, -1/3, -2, 1]; mean|A|·w = (2/3 + 2/3 + 2/3 + 4 + 2) / 10 = 0.8
    // A = [0.4166667, -0.4166667, -0.4166667, -2.5, 1.25]; loss = (0.8333333 - 0.4166667 - 0.2777778 - 2.5 + 1.25) / 5
    name: "advantage_balance -0.5",
    config: { ...CONFIG, advantageBalance: -0.5 },
    advantages: [0.4166667, -0.4166667, -0.4166667, -2.5, 1.25],
    loss: -0.2222222,
  },
];

describe("planRlRows", () => {
  it.each(CASES)("$name", ({ config, advantages, loss }) => {
    const plan = planRlRows(ROWS, GROUPS, config);
    expect(plan.skip).toBeNull();
    plan.rows.forEach((p, i) => {
      expect(p.kept).toBe(true);
      expect(p.advantage).toBeCloseTo(advantages[i]!, 6);
      expect(p.weight).toBeCloseTo([2, 1, 2 / 3, 1, 1][i]!, 5);
      expect(p.promptLength).toBe(2); // min(LCP 3, first trainable token 3) - 1
    });
    expect(rowMeanLoss(plan.rows)).toBeCloseTo(loss, 6);
  });

  it("drops zero-advantage trajectories before weighting", () => {
    // rewards [1, 0, 0.5]: A = [0.5, -0.5, 0] -> row 2 dropped. w raw [1, 1/2]; token-mean (1 + 1) / 3 -> w = [1.5, 0.75]
    // mean|A|·w = (1·0.5·1.5 + 2·0.5·0.75) / 3 = 0.5 -> A = [1, -1]; loss = (1·1.5 - 1·0.75) / 2 = 0.375
    const rows = [row(0, 0, 1), row(0, 1, 2), row(0, 2, 3)];
    const plan = planRlRows(rows, [[1, 0, 0.5]], CONFIG);
    expect(plan.rows.map((p) => p.drop)).toEqual([null, null, "zero_advantage"]);
    expect(plan.rows.map((p) => p.advantage)).toEqual([expect.closeTo(1, 6), expect.closeTo(-1, 6), 0]);
    expect(plan.rows.map((p) => p.weight)).toEqual([expect.closeTo(1.5, 5), expect.closeTo(0.75, 5), 0]);
    expect(rowMeanLoss(plan.rows)).toBeCloseTo(0.375, 5);
    expect(plan.counts).toMatchObject({ keptRows: 2, trainableTokens: 3, zeroAdvantageRows: 1, groupsTrainable: 1 });
  });

  it("shares one weight across a trajectory's histories", () => {
    // trajectory 0 has two histories (1 + 3 tokens): w = 1/4 each; trajectory 1: 1/2.
    const extra = { ...row(0, 0, 3), tokens: [1, 2, 3, 7, 8, 9] };
    const plan = planRlRows([row(0, 0, 1), extra, row(0, 1, 2)], [[1, 0]], CONFIG);
    // token-mean of raw w = (1·¼ + 3·¼ + 2·½) / 6 = 1/3 -> [0.75, 0.75, 1.5]
    expect(plan.rows.map((p) => p.weight)).toEqual([expect.closeTo(0.75, 5), expect.closeTo(0.75, 5), expect.closeTo(1.5, 5)]);
    expect(plan.rows[0]!.advantage).toBe(plan.rows[1]!.advantage);
  });

  it("drops rows longer than the sequence length and rows with nothing to train after the prompt", () => {
    const long = row(0, 0, 10);
    const plan = planRlRows([long, row(0, 1, 2)], [[1, 0]], { ...CONFIG, packedSequenceLength: 8 });
    expect(plan.seqLen).toBe(8);
    expect(plan.rows.map((p) => p.drop)).toEqual(["too_long", null]);
    expect(planRlRows([long], [[1, 0]], CONFIG, 4096).seqLen).toBe(2048);
    expect(planRlRows([long], [[1, 0]], CONFIG, 12).rows[0]!.drop).toBe("too_long");

    // The rows share [1, 2, 3, 4] (LCP 4); the first trainable token is at index 3 (row 0, flag
    // mode, no logprob). ART 0.5.23 reads the mask: prompt length min(4, 3) - 1 = 2, and row 0
    // trains (with the first logprob, index 4, the prompt would have been 3 and row 0 skipped).
    const inPrompt: AdvantageRow = { tokens: [1, 2, 3, 4, 5], assistantMask: [false, false, false, true, false], oldLogprobs: [null, null, null, null, null], groupIndex: 0, trajectoryIndex: 0 };
    const other: AdvantageRow = { tokens: [1, 2, 3, 4, 6], assistantMask: [false, false, false, false, true], oldLogprobs: [null, null, null, null, -1], groupIndex: 0, trajectoryIndex: 1 };
    const plan2 = planRlRows([inPrompt, other], [[1, 0]], { ...CONFIG, allowTrainingWithoutLogprobs: true });
    expect(plan2.rows.map((p) => [p.promptLength, p.drop])).toEqual([
      [2, null],
      [2, null],
    ]);
    const empty: AdvantageRow = { ...other, assistantMask: [false, false, false, false, false], trajectoryIndex: 0 };
    expect(planRlRows([empty, other], [[1, 0]], CONFIG).rows[0]!.drop).toBe("no_trainable_tokens");
  });

  it("skips the step without logprobs unless allowed, and when nothing is trainable", () => {
    const bare = (t: number): AdvantageRow => ({ ...row(0, t, 2), oldLogprobs: [null, null, null, null, null] });
    expect(planRlRows([bare(0), bare(1)], [[1, 0]], CONFIG).skip).toBe("no_logprobs");
    expect(planRlRows([bare(0), bare(1)], [[1, 0]], { ...CONFIG, allowTrainingWithoutLogprobs: true }).skip).toBeNull();
    expect(planRlRows([], [[1, 1]], CONFIG).skip).toBe("no_trainable_rows");
  });
});
