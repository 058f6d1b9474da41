// Spec §7 / §11.2: consecutive batches, one optimizer step each (AdamW wd 0, clip 1.0), loss = the
// batch's token-mean cross-entropy over assistant (label) tokens. Rows longer than the maximum
// sequence length are dropped and counted; a batch with no label tokens makes no step.
import { numpy as np } from "@jax-js/jax";
import type { MicroBatch, TrainingSession } from "../runner/session.js";
import { groupRows } from "../runner/micro-batches.js";
import { throwIfAborted, type StepReporter } from "../runner/progress.js";
import { SFT_MAX_GRAD_NORM, SFT_MAX_SEQ_LENGTH, type SftPlan } from "./config.js";
import { SFT_LOSS, type SftData } from "./loss.js";

/** A tokenized conversation: assistantMask[t] marks tokens that are labels (trained on). */
export interface SftTokens {
  tokens: number[];
  assistantMask: boolean[];
}

export interface SftSummary {
  steps: Record<string, number>[];
  droppedRows: number;
  trainedSteps: number;
}

export async function trainSft(
  session: TrainingSession,
  rows: readonly SftTokens[],
  plan: SftPlan,
  report: StepReporter,
  signal: AbortSignal,
  maxSeqLength = SFT_MAX_SEQ_LENGTH,
): Promise<SftSummary> {
  const steps: Record<string, number>[] = [];
  let droppedRows = 0;
  let trainedSteps = 0;
  for (let b = 0; b < plan.batches.length; b++) {
    throwIfAborted(signal);
    const started = performance.now();
    const [start, end] = plan.batches[b]!;
    const lr = plan.learningRates[b]!;
    const kept = rows.slice(start, end).filter((r) => r.tokens.length <= maxSeqLength);
    droppedRows += end - start - kept.length;
    // Position t predicts token t+1, so it is a label position iff token t+1 is an assistant token.
    const masks = kept.map((r) => r.assistantMask.slice(1).map((m) => (m ? 1 : 0)));
    const labels = masks.reduce((n, m) => n + m.reduce<number>((a, x) => a + x, 0), 0);
    const numTokens = kept.reduce((n, r) => n + r.tokens.length, 0);
    let loss = 0;
    let gradNorm = 0;
    if (labels > 0) {
      const micro: MicroBatch<SftData>[] = groupRows(kept.map((r) => r.tokens.length)).map((g) => ({
        build: () => {
          const mask = new Float32Array(g.rows.length * g.seqLen);
          g.rows.forEach((row, i) => mask.set(masks[row]!, i * g.seqLen));
          return {
            inputs: session.lm.inputs(g.rows.map((row) => kept[row]!.tokens), g.seqLen),
            data: { mask: np.array(mask).reshape([g.rows.length, g.seqLen]), invCount: np.array(1 / labels) },
          };
        },
      }));
      const out = await session.step(SFT_LOSS, micro, lr, SFT_MAX_GRAD_NORM);
      loss = out.loss;
      gradNorm = out.gradNorm;
      if (out.applied) trainedSteps++;
    }
    const seconds = (performance.now() - started) / 1000;
    const metrics = {
      gradient_step: b + 1,
      loss,
      grad_norm: gradNorm,
      learning_rate: lr,
      num_tokens: numTokens,
      num_trainable_tokens: labels,
      tokens_per_second: seconds > 0 ? numTokens / seconds : 0,
    };
    steps.push(metrics);
    report(metrics);
  }
  return { steps, droppedRows, trainedSteps };
}
