// RL learns: a GRPO-style loop through the public API on the tiny model. Each step samples groups
// of completions, rewards the share of the letter "e" in each reply, and trains one job on them;
// the mean reward rises over a few steps. The curve is printed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { followJob } from "../support/art-client.js";
import type { ServerProcess } from "../support/server-process.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let isolated: IsolatedServer;
let server: ServerProcess;
let key = "";
const rest = (method: string, path: string, body?: unknown) => restAt(method, path, { key, body, base: server.url });

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "rl", entity: "rl" });
  ({ server, key } = isolated);
});
afterAll(() => isolated?.stop());

const reward = (text: string) => [...text].filter((c) => c === "e").length / Math.max(1, [...text].length);

describe("RL learns", () => {
  it("raises the mean reward over a few steps", async () => {
    const model = (await rest("POST", "/v1/preview/models", { project: "rl", name: "e-lover", base_model: "tiny-chat" })).body as { id: string; entity: string };
    const name = `wandb-artifact:///${model.entity}/rl/e-lover`;
    const prompts = ["Tell me a story.", "Describe the sea.", "What is a tree?", "Say hello."];
    const curve: number[] = [];
    for (let step = 0; step < 6; step++) {
      const groups = [];
      let total = 0;
      let count = 0;
      for (const [index, prompt] of prompts.entries()) {
        const messages = [{ role: "user", content: prompt }];
        const sampled = await rest("POST", "/v1/chat/completions", {
          model: name,
          messages,
          n: 8,
          temperature: 1,
          seed: step * 100 + index,
          max_tokens: 16,
          logprobs: true,
          return_tokens_as_token_ids: true,
        });
        expect(sampled.status).toBe(200);
        const choices = (sampled.body as { choices: { message: { content: string } }[] }).choices;
        groups.push({
          trajectories: choices.map((choice) => {
            const r = reward(choice.message.content);
            total += r;
            count++;
            return { messages_and_choices: [...messages, choice], reward: r };
          }),
        });
      }
      curve.push(total / count);
      if (step === 5) break;
      const started = performance.now();
      const job = await rest("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.001 } });
      const outcome = await followJob(key, (job.body as { id: string }).id, model.id, server.url);
      expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
      // Progress, so a slow run under the full suite's load can be told from a stuck one.
      process.stdout.write(`rl-learns step ${step}: mean reward ${(total / count).toFixed(3)}, job ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    }
    process.stdout.write(`mean reward per step: ${curve.map((r) => r.toFixed(3)).join(" -> ")}\n`);
    // A small learning rate: larger ones collapse this random tiny model onto one reply within a
    // step or two (measured), which can land on a reply without the letter.
    expect(curve[curve.length - 1]).toBeGreaterThan((curve[0] as number) * 1.15);
    // 15 s alone; 76-135 s and once over 240 s while the SmolLM2 suites train on the same 2 cores.
  }, 600_000);
});
