// Spec §2.2 (tokenization part): every trajectory with a non-zero group advantage yields its rows:
// - captured exchanges: ./exchange-histories.ts;
// - Choices carrying the server's token ids (ART 0.5.23): its append-compatible sequences
//   (./exact-sequences.ts);
// - otherwise one row per history (primary, then additional), by the chat template (./rl-history.ts).
// Advantages, weights, prompt lengths, length drops and batch normalisation are ../rl/advantages.ts.
import type { JsonObject } from "@bufbuild/protobuf";
import { groupAdvantages } from "../rl/advantages.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import { exactSequences } from "./exact-sequences.js";
import { exchangeHistories } from "./exchange-histories.js";
import type { TrainedModel } from "./exchange-select-turns.js";
import { tokenizeHistory, type TokenizedHistory } from "./rl-history.js";
import { parseTrajectoryGroups, type ParsedTrajectory } from "./trajectories.js";

export interface RlRow {
  tokens: number[];
  /** true where tokens[i] is a sampled assistant token to train on. */
  assistantMask: boolean[];
  /** Per position: the sampler's logprob of tokens[i] when the Choice carried one, else null. */
  oldLogprobs: (number | null)[];
  reward: number;
  groupIndex: number;
  trajectoryIndex: number;
  /** The trajectory's i-th row: its i-th history (0 = messages_and_choices), sequence or exchange history. */
  historyIndex: number;
}

export interface RlTokenizeOptions {
  allowTrainingWithoutLogprobs: boolean;
  scaleRewards: boolean;
  /** Also tokenize trajectories whose advantage is exactly 0 (ART skips them). Default false. */
  includeZeroAdvantage?: boolean;
  /** The job's model: only its exchanges train (absent: a trajectory's exchanges must name one model). */
  trainedModel?: TrainedModel | null;
}

export function tokenizeTrajectoryGroups(tokenizer: ChatTokenizer, groups: readonly JsonObject[], options: RlTokenizeOptions): RlRow[] {
  const rows: RlRow[] = [];
  parseTrajectoryGroups(groups, options.trainedModel ?? null).forEach((group, groupIndex) => {
    const advantages = groupAdvantages(
      group.trajectories.map((t) => t.reward),
      options.scaleRewards,
    );
    group.trajectories.forEach((trajectory, trajectoryIndex) => {
      if (advantages[trajectoryIndex] === 0 && !options.includeZeroAdvantage) return;
      trajectoryRows(tokenizer, trajectory, options.allowTrainingWithoutLogprobs).forEach((tokenized, historyIndex) => {
        rows.push({ tokens: tokenized.tokens, assistantMask: tokenized.assistantMask, oldLogprobs: tokenized.oldLogprobs, reward: trajectory.reward, groupIndex, trajectoryIndex, historyIndex });
      });
    });
  });
  return rows;
}

function trajectoryRows(tokenizer: ChatTokenizer, trajectory: ParsedTrajectory, allowTrainingWithoutLogprobs: boolean): TokenizedHistory[] {
  const viaTemplate = (histories: typeof trajectory.histories) => histories.flatMap((history) => tokenizeHistory(tokenizer, history, allowTrainingWithoutLogprobs) ?? []);
  if (trajectory.turns.length > 0) {
    const fromExchanges = exchangeHistories(tokenizer, trajectory.turns, allowTrainingWithoutLogprobs, `${trajectory.where}.exchanges`);
    return fromExchanges.kind === "tokens" ? fromExchanges.histories : viaTemplate(fromExchanges.histories);
  }
  return exactSequences(trajectory.histories, allowTrainingWithoutLogprobs, trajectory.where) ?? viaTemplate(trajectory.histories);
}
