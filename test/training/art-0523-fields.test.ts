// What ART 0.5.23 sends, through the real API and the real trainer: fields the service honours
// change what training reports (packed_sequence_length drops rows; SFT assistant_turns "last"
// trains fewer tokens; metric_logging decides the run's rows), captured `exchanges` train, and
// fields it cannot honour are refused with a 400 naming them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { followJob as followJobAt } from "../support/art-client.js";
import { rest as restAt } from "../support/clients.js";
import type { ServerProcess } from "../support/server-process.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let isolated: IsolatedServer;
let server: ServerProcess;
let key = "";
const entity = "art0523";
const rest = (method: string, path: string, options: Parameters<typeof restAt>[2] = {}) => restAt(method, path, { ...options, base: server.url });
const followJob = (jobId: string, modelId: string) => followJobAt(key, jobId, modelId, server.url);

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "art0523", entity, env: { WORKER_LEASE_MS: "3000" } });
  ({ server, key } = isolated);
});
afterAll(() => isolated?.stop());

async function newModel(name: string): Promise<{ id: string; run_id: string }> {
  const res = await rest("POST", "/v1/preview/models", { key, body: { project: "fields", name, base_model: "tiny-chat" } });
  expect(res.status).toBe(200);
  return res.body as { id: string; run_id: string };
}

interface SampledResponse {
  prompt_token_ids: number[];
  choices: { index: number; message: { content: string }; token_ids: number[] }[];
}

/** Four samples of one prompt, as ART 0.5.23's client asks for them (logprobs, token ids). */
async function sample(model: string, seed: number): Promise<{ request: Record<string, unknown>; response: SampledResponse }> {
  const request = { model, messages: [{ role: "user", content: "Say something." }], n: 4, temperature: 1, seed, max_tokens: 10, logprobs: true, return_tokens_as_token_ids: true, return_token_ids: true };
  const res = await rest("POST", "/v1/chat/completions", { key, body: request });
  expect(res.status).toBe(200);
  return { request, response: res.body as SampledResponse };
}

const reward = (text: string) => [...text].filter((c) => c === "e").length / Math.max(1, text.length);

describe("RL experimental_config from ART 0.5.23", () => {
  it("refuses, with a 400 naming the field, what the service cannot honour", async () => {
    const model = await newModel("refused");
    const groups = [{ trajectories: [{ messages_and_choices: [{ role: "user", content: "x" }], reward: 1 }, { reward: 0 }] }];
    for (const [field, value] of [
      ["scale_learning_rate_by_reward_std_dev", true],
      ["plot_tensors", true],
      ["num_trajectories_learning_rate_multiplier_power", 0.5],
    ] as const) {
      const res = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups, experimental_config: { [field]: value } } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect((res.body as { detail: string }).detail).toMatch(new RegExp(`^experimental_config\\.${field}`));
    }
    const truncation = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups, experimental_config: { truncated_importance_sampling: 2, precalculate_logprobs: false } } });
    expect(truncation.status).toBe(400);
    expect((truncation.body as { detail: string }).detail).toMatch(/truncated_importance_sampling needs precalculate_logprobs=true/);
    // ART's defaults for the same switches (false / 0 / null) are accepted.
    const defaults = { scale_learning_rate_by_reward_std_dev: false, plot_tensors: false, num_trajectories_learning_rate_multiplier_power: 0, truncated_importance_sampling: null, logprob_calculation_chunk_size: 1024 };
    expect((await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups, experimental_config: defaults } })).status).toBe(200);
  }, 120000);

  it("packed_sequence_length drops the rows longer than it: the job's gradient steps change", async () => {
    const model = await newModel("packed");
    const { response } = await sample(`wandb-artifact:///${entity}/fields/packed`, 7);
    const prompt = [{ role: "user", content: "Say something." }];
    const groups = [{ trajectories: response.choices.map((choice, i) => ({ messages_and_choices: [...prompt, choice], reward: i === 0 ? 1 : reward(choice.message.content) })) }];
    const train = async (experimental: Record<string, unknown>) => {
      const job = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 1e-4, ...experimental } } });
      expect(job.status, JSON.stringify(job.body)).toBe(200);
      const outcome = await followJob((job.body as { id: string }).id, model.id);
      expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
      return outcome;
    };
    const whole = await train({});
    expect(whole.numSequences).toBeGreaterThan(0);
    expect(whole.gradientSteps.every((m) => (m.num_trainable_tokens ?? 0) > 0)).toBe(true);
    // Every row is longer than 16 tokens (the prompt alone is): all dropped, nothing trains.
    const short = await train({ logprob_calculation_chunk_size: 8, packed_sequence_length: 16 });
    expect(short.numSequences).toBe(0);
    expect(short.gradientSteps).toEqual([]);
  }, 240000);
});

describe("exchanges from ART 0.5.23", () => {
  it("trains captured chat_completions exchanges on the server's own token ids", async () => {
    const model = await newModel("exchanges");
    const name = `wandb-artifact:///${entity}/fields/exchanges`;
    const { request, response } = await sample(name, 11);
    // One exchange per trajectory, as ART's capture records a single-choice call. Rewards [1, 0, 0, 0]:
    // no advantage is 0, so every sampled token trains.
    const trajectories = response.choices.map((choice, i) => ({
      exchanges: { chat_completions: [{ request: { ...request, n: 1 }, response: { ...response, choices: [{ ...choice, index: 0 }] }, start_time: "2026-01-01T00:00:00Z", end_time: "2026-01-01T00:00:01Z" }] },
      reward: i === 0 ? 1 : 0,
    }));
    const job = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: model.id, trajectory_groups: [{ trajectories }], experimental_config: { learning_rate: 1e-4 } } });
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    const outcome = await followJob((job.body as { id: string }).id, model.id);
    expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
    expect(outcome.numSequences).toBeGreaterThan(0);
    // One row per exchange, training exactly the sampled ids (the step metric is the call's total).
    expect(outcome.numSequences).toBe(response.choices.length);
    const sampledTokens = response.choices.reduce((n, c) => n + c.token_ids.length, 0);
    for (const step of outcome.gradientSteps) expect(step.num_trainable_tokens).toBe(sampledTokens);
  }, 240000);
});

describe("SFT config from ART 0.5.23", () => {
  it('assistant_turns "last" trains only the final turn (fewer tokens), and metric_logging decides the run rows', async () => {
    const model = await newModel("sft-turns");
    const line = JSON.stringify({
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello there, friend." },
        { role: "user", content: "Bye" },
        { role: "assistant", content: "Ciao." },
      ],
    });
    const train = async (config: Record<string, unknown>) => {
      // A new data version per job: a job re-posted on the same data is the same job.
      const upload = await rest("POST", "/v1/preview/artifacts?project=fields&name=turns&type=dataset&filename=train.jsonl", { key, rawBody: `${line}\n${line}\n`, headers: { "content-type": "application/jsonl" } });
      expect(upload.status).toBe(200);
      const url = (upload.body as { url: string }).url;
      const job = await rest("POST", "/v1/preview/sft-training-jobs", { key, body: { model_id: model.id, training_data_url: url, config: { batch_size: 2, learning_rate: 1e-4, ...config } } });
      expect(job.status, JSON.stringify(job.body)).toBe(200);
      const outcome = await followJob((job.body as { id: string }).id, model.id);
      expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
      return outcome.gradientSteps[0]?.num_trainable_tokens ?? NaN;
    };
    const all = await train({ assistant_turns: "all", metric_logging: { enabled: true, target_training_step: 7 } });
    const last = await train({ assistant_turns: "last" });
    expect(last).toBeGreaterThan(0);
    expect(last).toBeLessThan(all);
    // metric_logging enabled: the averages and one sft/ row per optimizer step at step 7; absent: at the checkpoint step (2).
    const rows = async (metric: string) => ((await rest("GET", `/v1/preview/runs/${model.run_id}/metrics?name=${encodeURIComponent(metric)}`, { key })).body as { data: { step: number }[] }).data.map((m) => m.step);
    expect(await rows("train/loss")).toEqual([7, 2]);
    expect(await rows("sft/gradient_step")).toEqual([7]);
    await train({ metric_logging: { enabled: false } });
    expect(await rows("train/loss")).toEqual([7, 2]);
  }, 300000);
});
