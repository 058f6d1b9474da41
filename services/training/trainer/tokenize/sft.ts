// Spec §7.3: an SFT row {messages, tools?} -> the rendered conversation's tokens and its label mask,
// by ART's (Unsloth's) "all" response masking: every span from a response marker to the next
// instruction marker trains (assistant content and its end-of-turn tokens).
import type { JsonObject } from "@bufbuild/protobuf";
import { TrainingInputError } from "../api.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import { isObject, normalizeTools, parseItem } from "./messages.js";
import { lastAssistantTurnTokens } from "./sft-last-turn.js";

/** ART 0.5.23's TrainSFTConfig.assistant_turns: every assistant turn trains, or only the final one. */
export type AssistantTurns = "all" | "last";

export interface SftRowTokens {
  tokens: number[];
  /** true where tokens[i] is a label (trained) token. */
  assistantMask: boolean[];
}

export interface TurnMarkers {
  instruction: string;
  response: string;
}

/** index: the row's position in the job's data, for error messages. */
export function tokenizeSftRow(tokenizer: ChatTokenizer, row: JsonObject, index?: number, assistantTurns: AssistantTurns = "all"): SftRowTokens {
  const where = index === undefined ? "SFT row" : `SFT row ${index}`;
  if (!isObject(row)) throw new TrainingInputError(`${where}: expected an object {"messages": [...], "tools"?: [...]}`);
  if (!Array.isArray(row.messages) || row.messages.length === 0) throw new TrainingInputError(`${where}: "messages" must be a non-empty list`);
  const messages = row.messages.map((m, i) => parseItem(m, `${where} messages[${i}]`).message);
  const last = messages[messages.length - 1]!;
  if (last.role !== "assistant") throw new TrainingInputError(`${where}: the last message must be the assistant's (it is "${String(last.role)}")`);
  const tools = normalizeTools(row.tools, where);
  if (assistantTurns === "last") return lastAssistantTurnTokens(tokenizer, messages, tools, where);

  const tokens = tokenizer.tokenize(tokenizer.render(messages, tools, false));
  const markers = turnMarkers(tokenizer.templateSource);
  const assistantMask = responseMask(tokens, tokenizer.tokenize(markers.instruction), tokenizer.tokenize(markers.response));
  if (!assistantMask.some(Boolean)) throw new TrainingInputError(`${where}: no assistant tokens found after rendering (response marker ${JSON.stringify(markers.response)})`);
  return { tokens, assistantMask };
}

/** The instruction / response markers of the template's family (§7.3 auto-detection). */
export function turnMarkers(template: string): TurnMarkers {
  if (template.includes("<|im_start|>")) return { instruction: "<|im_start|>user\n", response: "<|im_start|>assistant\n" };
  if (template.includes("<|start_header_id|>")) {
    return { instruction: "<|start_header_id|>user<|end_header_id|>\n\n", response: "<|start_header_id|>assistant<|end_header_id|>\n\n" };
  }
  if (template.includes("<start_of_turn>")) return { instruction: "<start_of_turn>user\n", response: "<start_of_turn>model\n" };
  if (template.includes("[INST]")) return { instruction: "[INST]", response: "[/INST]" };
  throw new TrainingInputError("SFT: the chat template is none of ChatML, Llama 3, Gemma or Mistral, so its assistant turns cannot be located");
}

/** true on every token after a response marker up to the next instruction marker (or the end). */
export function responseMask(tokens: readonly number[], instruction: readonly number[], response: readonly number[]): boolean[] {
  const mask = tokens.map(() => false);
  const at = (i: number, marker: readonly number[]) => marker.length > 0 && marker.every((t, k) => tokens[i + k] === t);
  let i = 0;
  while (i < tokens.length) {
    if (!at(i, response)) {
      i++;
      continue;
    }
    let j = i + response.length;
    while (j < tokens.length && !at(j, instruction)) mask[j++] = true;
    i = j;
  }
  return mask;
}
