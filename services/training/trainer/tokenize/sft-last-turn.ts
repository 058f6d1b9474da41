// SFT `assistant_turns: "last"` (ART 0.5.23, art/preprocessing/tokenize.py
// _last_assistant_input_ids_and_labels): only the final assistant message trains. The prompt is the
// conversation before it rendered with a generation prompt; the target is what the full rendering
// adds after that prompt. Templates whose full rendering does not extend the generation prompt (a
// thinking prefix, say) are cut where a marker assistant message starts instead.
import type { JsonObject } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";

const MARKER = "__ART_FINAL_ASSISTANT_TARGET__";

export interface LastTurnTokens {
  tokens: number[];
  /** true on the final assistant turn's tokens only. */
  assistantMask: boolean[];
}

export function lastAssistantTurnTokens(tokenizer: ChatTokenizer, messages: readonly JsonObject[], tools: readonly JsonObject[] | null, where: string): LastTurnTokens {
  const final = messages[messages.length - 1];
  if (!final || final.role !== "assistant") throw new TrainingInputError(`${where}: assistant_turns="last" requires the final message to be an assistant`);
  const history = messages.slice(0, -1);
  const prompt = tokenizer.render(history, tools, true);
  const completed = tokenizer.render(messages, tools, false);
  const target = completed.startsWith(prompt) ? completed.slice(prompt.length) : markedTarget(tokenizer, history, final, tools, prompt, completed, where);
  // Each part is tokenized on its own, as ART's token_ids_for_template_part (no special tokens added).
  const promptIds = tokenizer.tokenize(prompt);
  const targetIds = tokenizer.tokenize(target);
  return { tokens: [...promptIds, ...targetIds], assistantMask: [...promptIds.map(() => false), ...targetIds.map(() => true)] };
}

function markedTarget(tokenizer: ChatTokenizer, history: readonly JsonObject[], final: JsonObject, tools: readonly JsonObject[] | null, prompt: string, completed: string, where: string): string {
  const historyText = tokenizer.render(history, tools, false);
  const hasOutput = ["content", "reasoning", "reasoning_content", "tool_calls"].some((key) => {
    const value = final[key];
    return Array.isArray(value) ? value.length > 0 : Boolean(value);
  });
  const marked = tokenizer.render([...history, { role: "assistant", content: MARKER }], tools, false);
  const start = marked.indexOf(MARKER);
  if (!prompt.startsWith(historyText) || !hasOutput || completed.includes(MARKER) || start < 0 || completed.slice(0, start) !== marked.slice(0, start)) {
    throw new TrainingInputError(`${where}: cannot isolate the final assistant response because the completed chat does not extend its generation prompt`);
  }
  return completed.slice(start);
}
