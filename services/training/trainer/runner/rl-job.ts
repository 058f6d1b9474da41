// An RL job (spec §11.1, Unsloth layout): tokenize the groups, plan advantages / weights / drops,
// then one optimizer step per kept row (one tokenized history each, shuffled): ART's loss
// (rl/loss.ts, row-mean reduction), clip 0.1, AdamW wd 0.1, lr = learning_rate × §3.4 factor.
// Nothing trainable -> no step; the job carries the previous adapter over (trained: false).
import type { JsonObject } from "@bufbuild/protobuf";
import { Prng } from "../../../weights/prng.js";
import { bucketLength } from "../model/inputs.js";
import { loadLora } from "../model/lora.js";
import { planRlRows } from "../rl/advantages.js";
import { resolveRlConfig, type RlConfig } from "../rl/config.js";
import { rlLossData } from "../rl/batch.js";
import { rlLossSpec } from "../rl/loss-spec.js";
import { tokenizeTrajectoryGroups, type RlRow } from "../tokenize/rl-rows.js";
import { groupRewards, parseTrajectoryGroups } from "../tokenize/trajectories.js";
import type { JobContext, LoopOutcome } from "./job.js";
import { groupRows } from "./micro-batches.js";
import { meanMetrics, throwIfAborted } from "./progress.js";
import { TrainingSession } from "./session.js";
import { withTokenizer } from "./tokenizer.js";

/** Spec §5.2 (RL). */
export const RL_WEIGHT_DECAY = 0.1;
export const RL_MAX_GRAD_NORM = 0.1;

export async function runRlJob(ctx: JobContext): Promise<LoopOutcome> {
  const config = resolveRlConfig(ctx.input.experimentalConfig);
  const groups = ctx.input.groups ?? [];
  const rewards = groupRewards(parseTrajectoryGroups(groups));
  const rows = await tokenize(ctx.input.baseModelPath, groups, config);
  const plan = planRlRows(rows, rewards, config);
  const data = {
    num_groups_submitted: groups.length,
    num_groups_trainable: plan.counts.groupsTrainable,
    num_trajectories: groups.reduce((n, g) => n + listLength(g["trajectories"]) + listLength(g["exceptions"]), 0),
  };
  throwIfAborted(ctx.signal);
  if (plan.skip) {
    ctx.progress.started(0);
    return { metrics: { ...data, num_trainable_tokens: 0, num_gradient_steps: 0 }, trained: false };
  }

  // ART permutes the rows; seeded here so a job can be replayed.
  const order = shuffle(
    plan.rows.flatMap((p, i) => (p.kept ? [i] : [])),
    new Prng(ctx.input.seed ?? Math.floor(Math.random() * 2 ** 32), "rl-rows"),
  );
  const keptRows = order.map((i) => rows[i]!);
  const stepData = { ...data, num_trainable_tokens: plan.counts.trainableTokens, num_gradient_steps: order.length };
  ctx.progress.started(order.length);

  // §5.3: with precalculate_logprobs "old" is the pre-update policy; the sampler's values become "original".
  const recomputed = config.precalculateLogprobs ? await noGradLogprobs(ctx, keptRows, null) : null;
  // §4.3: the KL reference is the adapter at kl_ref_adapter_path, else the base model (LoRA off).
  // The service resolves checkpoint names and reference steps into that path (kl-reference.ts).
  let reference: Float32Array[] | null = null;
  if (config.klPenaltyCoef > 0) {
    const refLora = config.klRefAdapterPath ? await loadLora(config.klRefAdapterPath, ctx.lm.base) : null;
    reference = await noGradLogprobs(ctx, keptRows, refLora ?? "base");
  }

  const loss = rlLossSpec(config, "row-mean");
  const session = new TrainingSession(ctx.lm, ctx.lora, RL_WEIGHT_DECAY);
  const steps: Record<string, number>[] = [];
  let applied = 0;
  for (let k = 0; k < order.length; k++) {
    throwIfAborted(ctx.signal);
    const started = performance.now();
    const row = keptRows[k]!;
    const rowPlan = plan.rows[order[k]!]!;
    const T = bucketLength(row.tokens.length);
    const out = await session.step(
      loss,
      [
        {
          build: () => ({
            inputs: ctx.lm.inputs([row.tokens], T),
            data: rlLossData([row], [rowPlan], T, {
              ...(recomputed ? { recomputedOldLogprobs: [recomputed[k]!] } : {}),
              ...(reference ? { refLogprobs: [reference[k]!] } : {}),
            }),
          }),
        },
      ],
      config.learningRate * rowPlan.learningRateMultiplier,
      RL_MAX_GRAD_NORM,
    );
    if (out.applied) applied++;
    const seconds = (performance.now() - started) / 1000;
    const metrics: Record<string, number> = {
      gradient_step: k + 1,
      loss: out.loss,
      grad_norm: out.gradNorm,
      // §6.1: the configured rate, not the §3.4-multiplied one.
      learning_rate: config.learningRate,
      ...out.aux,
      num_tokens: row.tokens.length,
      tokens_per_second: seconds > 0 ? row.tokens.length / seconds : 0,
      ...stepData,
    };
    steps.push(metrics);
    ctx.progress.step(metrics);
  }
  const { gradient_step: _index, ...averaged } = meanMetrics(steps);
  return { metrics: { ...averaged, ...stepData }, trained: applied > 0 };
}

/** Log-probs of every row under lora (or the base model), batched like training. */
async function noGradLogprobs(ctx: JobContext, rows: readonly RlRow[], which: null | "base" | JobContext["lora"]): Promise<Float32Array[]> {
  const lora = which === "base" ? null : (which ?? ctx.lora);
  const out: Float32Array[] = [];
  for (const group of groupRows(rows.map((r) => r.tokens.length))) {
    throwIfAborted(ctx.signal);
    const lp = await ctx.lm.logprobs(lora, group.rows.map((i) => rows[i]!.tokens), group.seqLen);
    group.rows.forEach((i, j) => (out[i] = lp[j]!));
  }
  return out;
}

function tokenize(modelPath: string, groups: readonly JsonObject[], config: RlConfig): Promise<RlRow[]> {
  return withTokenizer(modelPath, (tokenizer) =>
    tokenizeTrajectoryGroups(tokenizer, groups, { allowTrainingWithoutLogprobs: config.allowTrainingWithoutLogprobs, scaleRewards: config.scaleRewards }),
  );
}

function listLength(value: unknown): number {
  return Array.isArray(value) ? value.length : 0;
}

function shuffle<T>(items: T[], rng: Prng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rng.uniform() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
