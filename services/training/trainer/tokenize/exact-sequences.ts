// ART 0.5.23's RL tokenization of messages_and_choices (art/preprocessing/tokenize.py
// assemble_vllm_training_sequences): when the trainable Choices carry the inference server's own
// `prompt_token_ids` and `token_ids` (0.5.23 asks for them on every request), no chat template is
// rendered. Over the trajectory's histories in order, each trainable Choice's prompt ids extend
// the running sequence when they start with it (the rest of the prompt is appended, untrained),
// else the sequence is closed and a new one starts; its output ids follow, trained, with the
// Choice's logprobs. A Choice is trainable when it has a logprobs object, or with
// allow_training_without_logprobs (then without logprobs); plain assistant messages never are.
import { TrainingInputError } from "../api.js";
import type { ChoiceItem } from "./messages.js";
import type { TokenizedHistory } from "./rl-history.js";
import type { ParsedHistory } from "./trajectories.js";

/**
 * The trajectory's sequences, or null when no trainable Choice carries token ids (older clients:
 * the chat-template path, ./rl-history.ts). Mixed is refused: ART 0.5.23 requires the ids.
 */
export function exactSequences(histories: readonly ParsedHistory[], allowTrainingWithoutLogprobs: boolean, where: string): TokenizedHistory[] | null {
  const trainable: { choice: ChoiceItem; at: string }[] = [];
  for (const history of histories) {
    history.items.forEach((item, i) => {
      if (item.kind === "choice" && (item.hasLogprobs || allowTrainingWithoutLogprobs)) trainable.push({ choice: item, at: `${history.where}.messages_and_choices[${i}]` });
    });
  }
  const withIds = trainable.filter((t) => t.choice.tokenIds !== null);
  if (withIds.length === 0) return null;
  const missing = trainable.find((t) => t.choice.tokenIds === null);
  if (missing) throw new TrainingInputError(`${missing.at}: a trainable Choice without prompt_token_ids/token_ids in a trajectory whose other Choices carry them (ask the inference server for return_token_ids)`);

  const sequences: TokenizedHistory[] = [];
  let current: TokenizedHistory = { tokens: [], assistantMask: [], oldLogprobs: [] };
  const append = (ids: readonly number[], trained: boolean, logprobs: readonly (number | null)[] | null) => {
    current.tokens.push(...ids);
    current.assistantMask.push(...ids.map(() => trained));
    current.oldLogprobs.push(...ids.map((_, i) => logprobs?.[i] ?? null));
  };
  for (const { choice, at } of trainable) {
    const { promptIds, outputIds } = choice.tokenIds!;
    const logprobs = choiceLogprobs(choice, outputIds.length, at);
    if (current.tokens.length > 0 && !extends_(promptIds, current.tokens)) {
      sequences.push(current);
      current = { tokens: [], assistantMask: [], oldLogprobs: [] };
    }
    append(promptIds.slice(current.tokens.length), false, null);
    append(outputIds, true, logprobs);
  }
  if (current.tokens.length > 0) sequences.push(current);
  return sequences;
}

/** logprobs.content (else .refusal), one per output id; none (flag mode) -> nulls. */
function choiceLogprobs(choice: ChoiceItem, count: number, where: string): (number | null)[] | null {
  if (!choice.hasLogprobs) return null;
  const values = (choice.sampled ?? []).map((s) => s.logprob);
  if (values.length !== count) throw new TrainingInputError(`${where}: the Choice has ${values.length} logprobs for ${count} token_ids`);
  return values;
}

function extends_(prompt: readonly number[], running: readonly number[]): boolean {
  return prompt.length >= running.length && running.every((id, i) => prompt[i] === id);
}
