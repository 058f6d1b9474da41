// Spec §3 and the numeric parts of §2.2-2.3: group-relative advantages, per-trajectory token
// weights, prompt lengths, length drops, and the batch normalisation over all kept rows
// (weights to mean 1, advantage_balance, A / mean|A|·w). Plain float64 numbers; one value per
// row (each row is one tokenized history, so ART's §3.4 learning-rate factor is not applied:
// ./refused-settings.ts).
import type { RlConfig } from "./config.js";

/**
 * ART 0.5.23 (art/utils/grpo.py rewards_have_zero_variance): a group whose rewards are all within
 * 1e-12 of the first has no signal, so every advantage is 0 (it is not "trainable" either).
 */
export function rewardsHaveZeroVariance(rewards: readonly number[]): boolean {
  if (rewards.length <= 1) return true;
  const first = rewards[0]!;
  return rewards.every((r) => Math.abs(r - first) <= 1e-12);
}

/** §3.1: A_i = r_i − μ, divided by (population σ + 1e-6) when scaleRewards; 0 without variance. */
export function groupAdvantages(rewards: readonly number[], scaleRewards: boolean): number[] {
  const n = rewards.length;
  if (n === 0) return [];
  if (rewardsHaveZeroVariance(rewards)) return rewards.map(() => 0);
  const mean = rewards.reduce((a, b) => a + b, 0) / n;
  const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / n);
  return rewards.map((r) => (scaleRewards ? (r - mean) / (std + 1e-6) : r - mean));
}

/** §3.2: b > 0 shrinks negative advantages by (1 − b); b < 0 shrinks positive ones by (1 + b). */
export function balanceAdvantage(advantage: number, balance: number): number {
  if (balance > 0 && advantage < 0) return advantage * (1 - balance);
  if (balance < 0 && advantage > 0) return advantage * (1 + balance);
  return advantage;
}

/** What advantages need of a tokenized row (RlRow fits). */
export interface AdvantageRow {
  tokens: readonly number[];
  assistantMask: readonly boolean[];
  oldLogprobs: readonly (number | null)[];
  groupIndex: number;
  trajectoryIndex: number;
}

export type RowDrop = "zero_advantage" | "too_long" | "no_trainable_tokens";

export interface RowPlan {
  kept: boolean;
  drop: RowDrop | null;
  /** The group-relative advantage before batch normalisation. */
  groupAdvantage: number;
  /** Final advantage for every trainable token of the row (0 when dropped). */
  advantage: number;
  /** Final token weight (mean 1 over all kept trainable tokens; 0 when dropped). */
  weight: number;
  /** The group's shared-prompt length (§2.2 step 3). */
  promptLength: number;
  trainableTokens: number;
}

export interface RlPlan {
  rows: RowPlan[];
  /** §2.3 sequence length: longer rows were dropped. */
  seqLen: number;
  /** Why nothing trains (the job then carries the previous adapter over), or null. */
  skip: "no_trainable_rows" | "no_logprobs" | null;
  counts: { keptRows: number; trainableTokens: number; droppedTooLong: number; droppedNoTrainableTokens: number; zeroAdvantageRows: number; groupsTrainable: number };
}

export type AdvantageConfig = Pick<RlConfig, "scaleRewards" | "advantageBalance" | "packedSequenceLength" | "allowTrainingWithoutLogprobs">;

/**
 * rows: every tokenized history of the call; groupRewards[g]: the rewards of group g's
 * trajectories (all of them, also those that produced no row). maxSeqLength: ART's
 * max_seq_length (32768) or the trainer's context limit.
 */
export function planRlRows(rows: readonly AdvantageRow[], groupRewards: readonly (readonly number[])[], config: AdvantageConfig, maxSeqLength = 32768): RlPlan {
  const advantagesByGroup = groupRewards.map((r) => groupAdvantages(r, config.scaleRewards));
  const plans: RowPlan[] = rows.map((row) => {
    const groupAdvantage = advantagesByGroup[row.groupIndex]?.[row.trajectoryIndex];
    if (groupAdvantage === undefined) throw new Error(`row of group ${row.groupIndex} trajectory ${row.trajectoryIndex} has no reward`);
    const trainableTokens = row.assistantMask.filter(Boolean).length;
    return { kept: groupAdvantage !== 0, drop: groupAdvantage === 0 ? "zero_advantage" : null, groupAdvantage, advantage: 0, weight: 0, promptLength: 0, trainableTokens };
  });
  const live = (i: number) => plans[i]!.drop !== "zero_advantage";

  // §2.2 step 2: w = 1 / (all trainable tokens of the trajectory's histories + 1e-6).
  const tokensByTrajectory = new Map<string, number>();
  const key = (row: AdvantageRow) => `${row.groupIndex}/${row.trajectoryIndex}`;
  rows.forEach((row, i) => live(i) && tokensByTrajectory.set(key(row), (tokensByTrajectory.get(key(row)) ?? 0) + plans[i]!.trainableTokens));
  const rawWeight = rows.map((row) => 1 / ((tokensByTrajectory.get(key(row)) ?? 0) + 1e-6));

  // §2.2 step 3: prompt_length = max(min(LCP, first trainable token) − 1, 0) per group (ART
  // 0.5.23 tokenize_trajectory_groups: the mask, not the first logprob, marks the first target).
  const byGroup = new Map<number, number[]>();
  rows.forEach((row, i) => live(i) && byGroup.set(row.groupIndex, [...(byGroup.get(row.groupIndex) ?? []), i]));
  for (const members of byGroup.values()) {
    const promptLength = Math.max(Math.min(commonPrefix(members.map((i) => rows[i]!.tokens)), firstTrainable(members.map((i) => rows[i]!.assistantMask))) - 1, 0);
    for (const i of members) plans[i]!.promptLength = promptLength;
  }

  // §2.3: sequence length and drops.
  const maxLen = Math.max(0, ...rows.filter((_, i) => live(i)).map((r) => r.tokens.length));
  const seqLen = config.packedSequenceLength ?? Math.min(Math.ceil(maxLen / 2048) * 2048, maxSeqLength);
  rows.forEach((row, i) => {
    const plan = plans[i]!;
    if (!plan.kept) return;
    if (row.tokens.length > seqLen) Object.assign(plan, { kept: false, drop: "too_long" });
    else if (!row.assistantMask.slice(plan.promptLength).some(Boolean)) Object.assign(plan, { kept: false, drop: "no_trainable_tokens" });
  });

  // §2.3 batch normalisation over kept trainable tokens (each row's A and w are constant per token).
  const kept = plans.map((p, i) => ({ p, i })).filter(({ p }) => p.kept);
  const tokens = kept.reduce((a, { p }) => a + p.trainableTokens, 0);
  const meanWeight = kept.reduce((a, { p, i }) => a + p.trainableTokens * rawWeight[i]!, 0) / tokens;
  for (const { p, i } of kept) {
    p.weight = rawWeight[i]! / meanWeight;
    p.advantage = balanceAdvantage(p.groupAdvantage, config.advantageBalance);
  }
  const meanAbs = kept.reduce((a, { p }) => a + p.trainableTokens * Math.abs(p.advantage) * p.weight, 0) / tokens;
  // ART divides unconditionally; with every advantage balanced away that is 0/0, so leave A = 0.
  if (meanAbs > 0) for (const { p } of kept) p.advantage /= meanAbs;

  const hasLogprobs = kept.some(({ i }) => rows[i]!.oldLogprobs.some((v) => v !== null));
  return {
    rows: plans,
    seqLen,
    skip: kept.length === 0 || tokens === 0 ? "no_trainable_rows" : !hasLogprobs && !config.allowTrainingWithoutLogprobs ? "no_logprobs" : null,
    counts: {
      keptRows: kept.length,
      trainableTokens: tokens,
      droppedTooLong: plans.filter((p) => p.drop === "too_long").length,
      droppedNoTrainableTokens: plans.filter((p) => p.drop === "no_trainable_tokens").length,
      zeroAdvantageRows: plans.filter((p) => p.drop === "zero_advantage").length,
      groupsTrainable: groupRewards.filter((r) => !rewardsHaveZeroVariance(r)).length,
    },
  };
}

function commonPrefix(sequences: readonly (readonly number[])[]): number {
  const first = sequences[0] ?? [];
  let n = first.length;
  for (const s of sequences) {
    let k = 0;
    while (k < n && k < s.length && s[k] === first[k]) k++;
    n = k;
  }
  return n;
}

/** Smallest index of a trainable token over the rows (a row without one counts its length). */
function firstTrainable(masks: readonly (readonly boolean[])[]): number {
  return Math.min(...masks.map((mask) => {
    const i = mask.indexOf(true);
    return i >= 0 ? i : mask.length;
  }));
}
