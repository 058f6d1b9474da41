// Prepares one job in whatever thread calls it (a worker thread in production, see ../index.ts):
// the chat tokenizer of the base model, then the RL or SFT plan.
import { TrainingInputError, type TrainingJobInput } from "../api.js";
import { prepareRl } from "./prepare-rl.js";
import { prepareSft } from "./prepare-sft.js";
import type { PreparedJob } from "./prepared-job.js";
import { withTokenizer } from "./tokenizer.js";

export interface PrepareContext {
  quantizedBase: boolean;
}

export async function prepareJob(input: TrainingJobInput, context: PrepareContext): Promise<PreparedJob> {
  validate(input);
  return withTokenizer(input.baseModel.ggufPath, (tokenizer) => (input.kind === "sft" ? prepareSft(input, tokenizer) : prepareRl(input, tokenizer, context)));
}

function validate(input: TrainingJobInput): void {
  if (input.kind !== "sft" && input.kind !== "rl") throw new TrainingInputError(`unknown training kind ${String(input.kind)}`);
  if (!input.baseModel?.ggufPath) throw new TrainingInputError("the base model's GGUF path is required");
  if (input.kind === "sft" && !Array.isArray(input.sftRows)) throw new TrainingInputError("an SFT job needs sftRows");
  if (input.kind === "rl" && !Array.isArray(input.groups)) throw new TrainingInputError("an RL job needs groups");
}
