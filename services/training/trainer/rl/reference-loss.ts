// The §4.2 objective in float64 plain JS, written straight from the spec, to check ./loss.ts.
// Stop-gradients are modelled by a second input: every sg(·) is computed from
// `detachedNewLogprobs` (= newLogprobs by default), so a finite difference that perturbs only
// newLogprobs measures the same gradient autodiff computes.
import type { LossKnobs, LossReduction } from "./loss.js";

export interface ReferenceLossInputs {
  newLogprobs: readonly (readonly number[])[];
  detachedNewLogprobs?: readonly (readonly number[])[];
  /** null or NaN = absent. */
  oldLogprobs: readonly (readonly (number | null)[])[];
  advantages: readonly number[];
  weights: readonly number[];
  mask: readonly (readonly number[])[];
  originalLogprobs?: readonly (readonly (number | null)[])[];
  refLogprobs?: readonly (readonly number[])[];
  entropy?: readonly (readonly number[])[];
}

export interface ReferenceLossResult {
  loss: number;
  rowLosses: number[];
  klPolicyRef: number | null;
  entropy: number | null;
}

const present = (v: number | null | undefined): v is number => v !== null && v !== undefined && !Number.isNaN(v);
const clip = (x: number, lo: number, hi: number) => Math.min(Math.max(x, lo), hi);

export function referenceLoss(x: ReferenceLossInputs, c: LossKnobs, reduction: LossReduction = "row-mean"): ReferenceLossResult {
  const lo = 1 - c.epsilon;
  const hi = 1 + c.epsilonHigh;
  const rows = x.newLogprobs.map((lpNew, r) => {
    const lpSg = x.detachedNewLogprobs?.[r] ?? lpNew;
    const m = x.mask[r]!;
    const T = lpNew.length;
    const count = m.reduce((a, b) => a + b, 0);
    // Step 2 (and non-trainable positions, which cannot affect the loss).
    const old = lpSg.map((sg, t) => (m[t]! > 0 && present(x.oldLogprobs[r]![t]) ? x.oldLogprobs[r]![t]! : sg));
    // Steps 3-7 for a given log-prob vector: ρ_t.
    const rhoOf = (lp: readonly number[]) => {
      const d = lp.map((v, t) => v - old[t]!);
      const s = Math.exp(count > 0 ? d.reduce((a, v, t) => a + v * m[t]!, 0) / count : 0);
      return d.map((dt) => {
        const rt = Math.exp(dt);
        let rho = { token: rt, sequence: s, average: (rt + s) / 2, geometric_average: Math.sqrt(rt) * Math.sqrt(s) }[c.importanceSamplingLevel];
        if (c.maxNegativeAdvantageImportanceSamplingWeight) rho = Math.min(rho, c.maxNegativeAdvantageImportanceSamplingWeight);
        if (c.maskProbRatio) rho = lo < rho && rho < hi ? rho : 0;
        return rho;
      });
    };
    const rho = rhoOf(lpNew);
    const rhoSg = rhoOf(lpSg);
    // Step 8-9: advantages (all their inputs are stop-gradient).
    const A = lpSg.map((sg, t) => x.advantages[r]! - (c.kimiK2Tau ? c.kimiK2Tau * (sg - old[t]!) : 0));
    let kBar: number | null = null;
    if (c.klPenaltyCoef > 0 && x.refLogprobs) {
      const k = lpSg.map((sg, t) => ((c.klPenaltySource === "sample" ? old[t]! : sg) - (m[t]! > 0 ? x.refLogprobs![r]![t]! : 0)) * m[t]!);
      const kb = k.reduce((a, b) => a + b, 0) / (count + 1e-18);
      k.forEach((kt, t) => (A[t] = A[t]! + c.klPenaltyCoef * (kb - kt) * m[t]!));
      kBar = kb;
    }
    let sum = 0;
    let entropy = 0;
    for (let t = 0; t < T; t++) {
      // Step 10.
      let l = c.lossFn === "ppo" ? -Math.min(rho[t]! * A[t]!, clip(rho[t]!, lo, hi) * A[t]!) : -clip(rhoSg[t]!, lo, hi) * A[t]! * lpNew[t]!;
      // Step 11.
      if (c.truncatedImportanceSampling) {
        const orig = x.originalLogprobs?.[r]?.[t];
        const q = x.originalLogprobs ? Math.exp(old[t]! - (m[t]! > 0 && present(orig) ? orig : lpSg[t]!)) : rhoSg[t]!;
        l *= Math.min(q, c.truncatedImportanceSampling);
      }
      // Step 12.
      sum += l * x.weights[r]! * m[t]!;
      entropy += (x.entropy?.[r]?.[t] ?? 0) * x.weights[r]! * m[t]!;
    }
    return { sum, count, kBar, entropy };
  });
  const live = rows.filter((row) => row.count > 0);
  const meanLive = (f: (row: (typeof rows)[number]) => number) => live.reduce((a, row) => a + f(row), 0) / Math.max(live.length, 1);
  const rowLosses = rows.map((row) => row.sum / (row.count + 1e-18));
  const loss =
    reduction === "token-mean" ? rows.reduce((a, row) => a + row.sum, 0) / (rows.reduce((a, row) => a + row.count, 0) + 1e-18) : meanLive((row) => row.sum / (row.count + 1e-18));
  const entropy = !x.entropy
    ? null
    : reduction === "token-mean"
      ? rows.reduce((a, row) => a + row.entropy, 0) / (rows.reduce((a, row) => a + row.count, 0) + 1e-18)
      : meanLive((row) => row.entropy / (row.count + 1e-18));
  const klPolicyRef = rows.some((row) => row.kBar !== null) ? meanLive((row) => row.kBar ?? 0) : null;
  return { loss, rowLosses, klPolicyRef, entropy };
}
