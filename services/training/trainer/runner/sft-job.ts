// An SFT job (spec §7): tokenize every row with the model's chat template, plan the batches,
// train one optimizer step per batch.
import type { JsonObject } from "@bufbuild/protobuf";
import { planSft, SFT_WEIGHT_DECAY } from "../sft/config.js";
import { trainSft, type SftTokens } from "../sft/train.js";
import { tokenizeSftRow } from "../tokenize/sft.js";
import type { JobContext, LoopOutcome } from "./job.js";
import { meanMetrics, throwIfAborted } from "./progress.js";
import { TrainingSession } from "./session.js";
import { withTokenizer } from "./tokenizer.js";

export async function runSftJob(ctx: JobContext): Promise<LoopOutcome> {
  const rowsIn = ctx.input.sftRows ?? [];
  const plan = planSft(ctx.input.sftConfig, rowsIn.length);
  const rows = await tokenizeRows(ctx.input.baseModelPath, rowsIn);
  throwIfAborted(ctx.signal);
  ctx.progress.started(plan.batches.length);
  const session = new TrainingSession(ctx.lm, ctx.lora, SFT_WEIGHT_DECAY);
  const summary = await trainSft(session, rows, plan, (m) => ctx.progress.step(m), ctx.signal);
  const { gradient_step: _index, ...averaged } = meanMetrics(summary.steps);
  return {
    metrics: {
      ...averaged,
      num_trajectories: rowsIn.length,
      num_dropped_trajectories: summary.droppedRows,
      num_gradient_steps: plan.batches.length,
    },
    trained: summary.trainedSteps > 0,
  };
}

function tokenizeRows(modelPath: string, rows: readonly JsonObject[]): Promise<SftTokens[]> {
  return withTokenizer(modelPath, (tokenizer) => rows.map((row, i) => tokenizeSftRow(tokenizer, row, i)));
}
