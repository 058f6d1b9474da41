// SFT job configuration (spec §7.1-7.2): batch_size int | "auto" (-> 2), learning_rate number |
// number[] (one per batch, in order; a list shorter than the number of batches fails);
// assistant_turns "all" (default) | "last" (ART 0.5.23: only the final assistant message trains).
import { TrainingInputError } from "../api.js";
import type { AssistantTurns } from "../tokenize/sft.js";

export const SFT_DEFAULT_LEARNING_RATE = 5e-5;
export const SFT_AUTO_BATCH_SIZE = 2;
/** Spec §5.2: SFT uses no weight decay and clips at 1.0. */
export const SFT_WEIGHT_DECAY = 0;
export const SFT_MAX_GRAD_NORM = 1.0;
/** Spec §7.3 (Unsloth's max_seq_length default): longer conversations are dropped, not cut. */
export const SFT_MAX_SEQ_LENGTH = 32768;

export interface SftPlan {
  batchSize: number;
  /** One learning rate per batch. */
  learningRates: number[];
  /** Row index ranges [start, end) of each batch, consecutive and unshuffled. */
  batches: [number, number][];
  assistantTurns: AssistantTurns;
}

export function planSft(config: Record<string, unknown> | undefined, rowCount: number): SftPlan {
  const c = config ?? {};
  const bs = c["batch_size"] ?? "auto";
  let batchSize: number;
  if (bs === "auto") batchSize = SFT_AUTO_BATCH_SIZE;
  else if (typeof bs === "number" && Number.isInteger(bs) && bs >= 1) batchSize = bs;
  else throw new TrainingInputError(`batch_size must be a positive integer or "auto", got ${JSON.stringify(bs)}`);

  const batches: [number, number][] = [];
  for (let start = 0; start < rowCount; start += batchSize) batches.push([start, Math.min(rowCount, start + batchSize)]);

  const lr = c["learning_rate"] ?? SFT_DEFAULT_LEARNING_RATE;
  let learningRates: number[];
  if (typeof lr === "number") {
    if (!Number.isFinite(lr) || lr < 0) throw new TrainingInputError(`learning_rate must be a non-negative number, got ${lr}`);
    learningRates = batches.map(() => lr);
  } else if (Array.isArray(lr)) {
    if (!lr.every((x): x is number => typeof x === "number" && Number.isFinite(x) && x >= 0)) {
      throw new TrainingInputError("learning_rate list must hold non-negative numbers");
    }
    if (lr.length < batches.length) {
      throw new TrainingInputError(`learning_rate has ${lr.length} values but the data makes ${batches.length} batches (batch_size ${batchSize})`);
    }
    learningRates = lr.slice(0, batches.length);
  } else {
    throw new TrainingInputError("learning_rate must be a number or a list of numbers");
  }
  const turns = c["assistant_turns"] ?? "all";
  if (turns !== "all" && turns !== "last") throw new TrainingInputError(`assistant_turns must be "all" or "last", got ${JSON.stringify(turns)}`);
  return { batchSize, learningRates, batches, assistantTurns: turns };
}
