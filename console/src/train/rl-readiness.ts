// What an RL job could learn from a batch of stored groups, read before it is sent: trajectories
// need the model's own sampled Choices (with logprobs) in `messages_and_choices`, and a group whose
// rewards are all equal has no advantage to learn from. The server's reader decides in the end; this
// tells the person early why a batch would teach nothing.
import type { JsonObject } from "@bufbuild/protobuf";
import { isObject, listOf, meanAndStd } from "../trajectories/shapes.js";

export interface Readiness {
  groups: number;
  trajectories: number;
  /** Trajectories with at least one Choice (or assistant message) to train. */
  withOutput: number;
  /** Trajectories whose every Choice carries logprobs. */
  withLogprobs: number;
  /** Groups whose trajectories all have one reward (ART skips them: zero advantage). */
  flatGroups: number;
  meanReward: number | null;
}

/** ART's structural test for a Choice (services/training/trainer/tokenize/messages.ts isChoice). */
function isChoice(item: JsonObject): boolean {
  return typeof item.role !== "string" && (isObject(item.message) || "finish_reason" in item || "logprobs" in item);
}

export function readiness(groups: readonly JsonObject[]): Readiness {
  const out: Readiness = { groups: groups.length, trajectories: 0, withOutput: 0, withLogprobs: 0, flatGroups: 0, meanReward: null };
  const rewards: number[] = [];
  for (const group of groups) {
    const groupRewards = new Set<number>();
    for (const trajectory of listOf(group.trajectories).filter(isObject)) {
      out.trajectories++;
      const reward = typeof trajectory.reward === "number" ? trajectory.reward : 0;
      rewards.push(reward);
      groupRewards.add(reward);
      const items = listOf(trajectory.messages_and_choices).filter(isObject);
      const choices = items.filter(isChoice);
      const assistant = items.some((item) => item.role === "assistant");
      if (choices.length > 0 || assistant) out.withOutput++;
      if (choices.length > 0 && choices.every((choice) => isObject(choice.logprobs))) out.withLogprobs++;
    }
    if (groupRewards.size <= 1) out.flatGroups++;
  }
  out.meanReward = meanAndStd(rewards).mean;
  return out;
}
