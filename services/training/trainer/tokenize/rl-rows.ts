// Spec §2.2 (tokenization part): every trajectory with a non-zero group advantage yields one row
// per history (primary, then additional histories). Advantages, weights, prompt lengths, length
// drops and batch normalisation are ../rl/advantages.ts.
import type { JsonObject } from "@bufbuild/protobuf";
import { groupAdvantages } from "../rl/advantages.js";
import type { ChatTokenizer } from "./chat-tokenizer.js";
import { tokenizeHistory } from "./rl-history.js";
import { parseTrajectoryGroups } from "./trajectories.js";

export interface RlRow {
  tokens: number[];
  /** true where tokens[i] is a sampled assistant token to train on. */
  assistantMask: boolean[];
  /** Per position: the sampler's logprob of tokens[i] when the Choice carried one, else null. */
  oldLogprobs: (number | null)[];
  reward: number;
  groupIndex: number;
  trajectoryIndex: number;
  /** 0 = messages_and_choices, i + 1 = additional_histories[i] (or the i-th exchange choice). */
  historyIndex: number;
}

export interface RlTokenizeOptions {
  allowTrainingWithoutLogprobs: boolean;
  scaleRewards: boolean;
  /** Also tokenize trajectories whose advantage is exactly 0 (ART skips them). Default false. */
  includeZeroAdvantage?: boolean;
}

export function tokenizeTrajectoryGroups(tokenizer: ChatTokenizer, groups: readonly JsonObject[], options: RlTokenizeOptions): RlRow[] {
  const rows: RlRow[] = [];
  parseTrajectoryGroups(groups).forEach((group, groupIndex) => {
    const advantages = groupAdvantages(
      group.trajectories.map((t) => t.reward),
      options.scaleRewards,
    );
    group.trajectories.forEach((trajectory, trajectoryIndex) => {
      if (advantages[trajectoryIndex] === 0 && !options.includeZeroAdvantage) return;
      trajectory.histories.forEach((history, historyIndex) => {
        const tokenized = tokenizeHistory(tokenizer, history, options.allowTrainingWithoutLogprobs);
        if (tokenized) rows.push({ ...tokenized, reward: trajectory.reward, groupIndex, trajectoryIndex, historyIndex });
      });
    });
  });
  return rows;
}
