// A trajectory's `exchanges` -> the captured turns it trains on (ART 0.5.23
// art/trajectories/_selection.py resolve_training_model, _tokenize.py _exchange_list): every
// exchange names its model; only the trained model's exchanges count (a judge's, captured beside
// them, are left out), they must come from one protocol, and they are taken in (start_time,
// end_time) order.
import type { JsonValue } from "@bufbuild/protobuf";
import { parseModelName } from "../../../models/index.js";
import { TrainingInputError } from "../api.js";
import { isObject, listOf } from "./messages.js";
import { anthropicMessagesTurn } from "./exchange-anthropic-messages.js";
import { type CapturedTurn, type ExchangeKind } from "./exchange-captured-turn.js";
import { chatCompletionsTurn } from "./exchange-chat-completions.js";
import { completionsTurn } from "./exchange-completions.js";
import { responsesTurn } from "./exchange-responses.js";

const PARSERS: Record<ExchangeKind, (exchange: JsonValue, where: string) => CapturedTurn> = {
  chat_completions: chatCompletionsTurn,
  completions: completionsTurn,
  responses: responsesTurn,
  messages: anthropicMessagesTurn,
};

/** The model a job trains: `{entity}/{project}/{name}` (any checkpoint of it, in any name form). */
export interface TrainedModel {
  entity: string;
  project: string;
  name: string;
}

export function selectTurns(value: JsonValue | undefined, where: string, trained: TrainedModel | null): CapturedTurn[] {
  if (value === undefined || value === null) return [];
  if (!isObject(value)) throw new TrainingInputError(`${where}: expected an object`);
  const turns: CapturedTurn[] = [];
  for (const [kind, list] of Object.entries(value)) {
    if (!(kind in PARSERS)) throw new TrainingInputError(`${where}.${kind}: unknown exchange kind (known: ${Object.keys(PARSERS).join(", ")})`);
    listOf(list, `${where}.${kind}`).forEach((exchange, i) => turns.push(PARSERS[kind as ExchangeKind](exchange, `${where}.${kind}[${i}]`)));
  }
  if (turns.length === 0) return [];
  const unnamed = turns.find((t) => t.model === null);
  if (unnamed) throw new TrainingInputError(`${unnamed.where}: every trained exchange must name its model (request.model or response.model)`);
  const models = [...new Set(turns.map((t) => t.model as string))];
  const matching = trained ? models.filter((m) => namesModel(m, trained)) : models;
  if (matching.length === 0) throw new TrainingInputError(`${where}: no exchange is for the trained model ${trained ? `${trained.project}/${trained.name}` : ""} (models: ${models.join(", ")})`);
  // Checkpoints of the trained model are one policy here, whatever step each name pins.
  if (!trained && matching.length > 1) throw new TrainingInputError(`${where}: exchanges of several models (${matching.join(", ")}); training needs exactly one`);
  const selected = turns.filter((t) => matching.includes(t.model as string));
  const kinds = [...new Set(selected.map((t) => t.kind))];
  if (kinds.length > 1) throw new TrainingInputError(`${where}: the trained model's exchanges mix protocols (${kinds.join(", ")}); training needs one`);
  // Stable: equal or missing times keep the order sent.
  return selected.map((turn, order) => ({ turn, order })).sort((a, b) => compareTimes(a.turn, b.turn) || a.order - b.order).map(({ turn }) => turn);
}

function namesModel(model: string, trained: TrainedModel): boolean {
  const name = parseModelName(model, () => false);
  return name.kind === "registered" && name.project === trained.project && name.name === trained.name && (name.entity === null || name.entity === trained.entity);
}

function compareTimes(a: CapturedTurn, b: CapturedTurn): number {
  const key = (t: CapturedTurn) => [Number.isNaN(t.start) ? 0 : t.start, Number.isNaN(t.end) ? 0 : t.end] as const;
  const [as, ae] = key(a);
  const [bs, be] = key(b);
  return as - bs || ae - be;
}
