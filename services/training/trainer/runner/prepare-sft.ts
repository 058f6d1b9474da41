// An SFT job (spec §7): tokenize every row with the model's chat template (every assistant turn
// trains, or with assistant_turns "last" only the final one), plan the batches (one
// optimizer step each, AdamW wd 0, clip 1.0; rows longer than the maximum sequence length are
// dropped and counted).
import type { TrainingJobInput } from "../api.js";
import { loraSettings } from "../lora-config.js";
import { planSft, SFT_MAX_GRAD_NORM, SFT_MAX_SEQ_LENGTH, SFT_WEIGHT_DECAY } from "../sft/config.js";
import type { ChatTokenizer } from "../tokenize/chat-tokenizer.js";
import { tokenizeSftRow } from "../tokenize/sft.js";
import { ADAM, type PreparedJob } from "./prepared-job.js";

export function prepareSft(input: TrainingJobInput, tokenizer: ChatTokenizer, maxSeqLength = SFT_MAX_SEQ_LENGTH): PreparedJob {
  const rowsIn = input.sftRows ?? [];
  const plan = planSft(input.sftConfig, rowsIn.length);
  const lora = loraSettings(input.sftConfig?.lora_config, input.seed);
  const tokenized = rowsIn.map((row, i) => tokenizeSftRow(tokenizer, row, i, plan.assistantTurns));
  const keep = tokenized.map((r) => r.tokens.length <= maxSeqLength);
  const index = new Map<number, number>();
  const rows = tokenized.flatMap((r, i) => {
    if (!keep[i]) return [];
    index.set(i, index.size);
    return [{ tokens: r.tokens, trained: r.assistantMask, advantage: 0, weight: 1 }];
  });
  const steps = plan.batches.map(([start, end], b) => ({
    rows: range(start, end).flatMap((i) => (keep[i] ? [index.get(i)!] : [])),
    learningRate: plan.learningRates[b]!,
  }));
  return {
    kind: "sft",
    rows,
    steps,
    loss: { kind: "sft" },
    optimizer: { ...ADAM, weightDecay: SFT_WEIGHT_DECAY, maxGradNorm: SFT_MAX_GRAD_NORM },
    lora,
    skip: rows.length === 0,
    stepMetrics: {},
    reportedLearningRate: null,
    jobMetrics: { num_trajectories: rowsIn.length, num_dropped_trajectories: keep.filter((k) => !k).length, num_gradient_steps: plan.batches.length },
  };
}

function range(start: number, end: number): number[] {
  return Array.from({ length: end - start }, (_, i) => start + i);
}
