// A trajectory group the way ART builds one: 4 replies to one prompt sampled with logprobs as
// token ids, rewarded 0, 0.25, 0.5 and 0.75 so every group has something to learn from.
import { rest } from "./clients.js";

export interface SampledGroup {
  trajectories: { messages_and_choices: unknown[]; reward: number }[];
}

export async function sampledGroup(options: { base: string; key: string; model: string; prompt: string; seed: number }): Promise<SampledGroup> {
  const messages = [{ role: "user", content: options.prompt }];
  const body = { model: options.model, messages, n: 4, temperature: 1, seed: options.seed, max_tokens: 8, logprobs: true, return_tokens_as_token_ids: true };
  const sampled = await rest("POST", "/v1/chat/completions", { key: options.key, base: options.base, body });
  if (sampled.status !== 200) throw new Error(`sampling ${options.model}: ${sampled.status} ${sampled.text}`);
  const choices = (sampled.body as { choices: unknown[] }).choices;
  return { trajectories: choices.map((choice, i) => ({ messages_and_choices: [...messages, choice], reward: i / 4 })) };
}
