// The run views in Chromium against a real server with a training worker: the models list (latest
// step, job status, relative dates, copying an id, picking runs to compare), the model page (a
// uPlot panel per metric with its own scale, hover, smoothing, log scale, checkpoints in columns,
// "try this step"), a job page followed while it trains and after, a failed job's error in plain
// sight, and two runs compared. Screenshots at 1280 and 420 px go to test/artifacts/console/.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { launchBrowser, screenshotBoth, signedInPage } from "../support/console-browser.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

interface Model {
  id: string;
  entity: string;
  project: string;
  name: string;
}
interface Choice {
  logprobs: { content: { token: string }[] };
}

let isolated: IsolatedServer;
let browser: Browser;
let page: Page;
let url = "";
let key = "";
let alpha: Model;
let beta: Model;

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await restAt(method, path, { key, body, base: url });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${response.text}`);
  return response.body as T;
}

const createModel = (name: string) => api<Model>("POST", "/v1/preview/models", { project: "runs", name, base_model: "tiny-chat" });
const logVal = (model: Model, rewards: number[]) => api("POST", `/v1/preview/models/${model.id}/log`, { split: "val", trajectory_groups: [{ trajectories: rewards.map((reward) => ({ reward })) }] });

/** `count` groups of 4 sampled replies (logprobs as token ids, as ART samples), rewards spread within each group. */
async function sampleGroups(model: Model, count: number, maxTokens = 8, mutate?: (choices: Choice[]) => void) {
  const groups = [];
  for (let g = 0; g < count; g++) {
    const messages = [{ role: "user", content: `Say something about the number ${g}.` }];
    const sampled = await api<{ choices: Choice[] }>("POST", "/v1/chat/completions", {
      model: `wandb-artifact:///${model.entity}/${model.project}/${model.name}`,
      messages,
      n: 4,
      temperature: 1,
      seed: g + 1,
      max_tokens: maxTokens,
      logprobs: true,
      return_tokens_as_token_ids: true,
    });
    mutate?.(sampled.choices);
    groups.push({ trajectories: sampled.choices.map((choice, i) => ({ messages_and_choices: [...messages, choice], reward: (i + (g % 3)) / 6 })) });
  }
  return groups;
}

async function train(model: Model, groups: unknown[]): Promise<string> {
  return (await api<{ id: string }>("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.0001 } })).id;
}

async function finished(jobId: string): Promise<{ status: string; step: number | null }> {
  for (;;) {
    const job = await api<{ status: string; step: number | null }>("GET", `/v1/preview/training-jobs/${jobId}`);
    if (job.status === "succeeded" || job.status === "failed") return job;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const panel = (metric: string) => `.panel[data-metric="${metric}"]`;
const attribute = async (selector: string, name: string) => (await page.getAttribute(selector, name)) ?? "";

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "runs", entity: "runs-team" });
  url = isolated.server.url;
  key = isolated.key;
  [alpha, beta] = await Promise.all([createModel("alpha"), createModel("beta")]);
  // Each run: a validation reward at step 0, a small RL job (step 1), a validation reward at step 1.
  await Promise.all([logVal(alpha, [0.2, 0.4]), logVal(beta, [0.1, 0.3])]);
  const jobs = [await train(alpha, await sampleGroups(alpha, 2)), await train(beta, await sampleGroups(beta, 2))];
  for (const job of jobs) expect((await finished(job)).status).toBe("succeeded");
  await Promise.all([logVal(alpha, [0.6, 0.8]), logVal(beta, [0.5, 0.5])]);
  browser = await launchBrowser();
  page = await signedInPage(browser, url, key);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("run views", () => {
  it("lists models with their latest step, job status and age, copies ids and picks runs to compare", async () => {
    await page.goto(`${url}/#/`);
    const row = `tr[data-model-id="${alpha.id}"]`;
    await page.waitForSelector(`${row} td[data-col="latest-step"]:has-text("1")`);
    await page.waitForSelector(`${row} td[data-col="job"] [data-status="succeeded"]`);
    expect(await page.getAttribute(`${row} td[data-col="job"] a`, "href")).toMatch(/^#\/jobs\/[0-9a-f-]{36}$/);
    const created = page.locator(`${row} td[data-col="created"] time`);
    expect(await created.textContent()).toMatch(/ago|now/);
    expect(await created.getAttribute("title")).toMatch(/\d{4}/); // the absolute time on hover
    // Short ids, copied whole.
    expect(await page.textContent(`${row} .short-id code`)).toBe(alpha.id.slice(0, 8));
    await page.click(`${row} button.copy`);
    expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(alpha.id);
    await screenshotBoth(page, "models");

    await page.check(`${row} input[name="compare"]`);
    expect(await page.isDisabled('button[data-action="compare"]')).toBe(true);
    await page.check(`tr[data-model-id="${beta.id}"] input[name="compare"]`);
    await page.click('button[data-action="compare"]');
    await page.waitForURL(/#\/compare\?models=/);
    expect(new URL(page.url()).hash).toBe(`#/compare?models=${alpha.id},${beta.id}`);
  });

  it("compares two runs: one panel per metric, one series per model, links back", async () => {
    await page.goto(`${url}/#/compare?models=${alpha.id},${beta.id}`);
    await page.waitForSelector(`${panel("val/reward")}[data-runs="2"][data-points="4"]`);
    const legend = (await page.textContent(`${panel("val/reward")} .u-legend`)) ?? "";
    expect(legend).toContain("alpha");
    expect(legend).toContain("beta");
    await page.waitForSelector(`${panel("train/loss")}[data-runs="2"]`);
    // Each run its own marker shape (in the legend and the list of runs), panels grouped by family.
    expect(await attribute(panel("val/reward"), "data-marker-shapes")).toBe("circle square");
    expect(await page.locator(`${panel("val/reward")} .u-legend .marker-icon`).evaluateAll((icons) => icons.map((icon) => icon.getAttribute("data-shape")))).toEqual(["circle", "square"]);
    expect(await page.locator(".run-keys .marker-icon").count()).toBe(2);
    expect(await page.locator(`.panel-group[data-group="val"] ${panel("val/reward")}`).count()).toBe(1);
    expect(await page.locator(`.panel-group[data-group="train"] ${panel("train/loss")}`).count()).toBe(1);
    expect(await page.getAttribute(`.run-keys li[data-model-id="${alpha.id}"] a`, "href")).toBe(`#/models/${alpha.id}`);
    expect(await page.getAttribute(`.run-keys li[data-model-id="${beta.id}"] a`, "href")).toBe(`#/models/${beta.id}`);
    await screenshotBoth(page, "compare", () => page.waitForSelector(`${panel("val/reward")} canvas`).then(() => undefined));
  });

  it("shows a model: panels with their own scales, hover, smoothing, log scale, checkpoints and jobs", async () => {
    await page.goto(`${url}/#/models/${alpha.id}`);
    const reward = panel("val/reward");
    await page.waitForSelector(`${reward}[data-points="2"]`);
    await page.waitForSelector(`${panel("train/grad_norm")}[data-points="1"]`);
    // Rewards first, then the other validation metrics, then loss and grad_norm.
    const order = await page.$$eval(".panel", (panels) => panels.map((p) => p.getAttribute("data-metric")));
    expect(order[0]).toBe("val/reward");
    expect(order.indexOf("train/loss")).toBeLessThan(order.indexOf("train/grad_norm"));
    expect(order.indexOf("val/reward_std_dev")).toBeLessThan(order.indexOf("train/loss"));
    // Each panel has its own y scale, around its own values; step ticks on x.
    const [low, high] = (await attribute(reward, "data-y-range")).split(" ").map(Number);
    expect(low).toBeLessThanOrEqual(0.3);
    expect(high).toBeGreaterThanOrEqual(0.7);
    expect(await attribute(reward, "data-y-range")).not.toBe(await attribute(panel("train/grad_norm"), "data-y-range"));
    expect((await attribute(reward, "data-x-ticks")).split(" ")).toEqual(expect.arrayContaining(["0", "1"]));
    expect(await attribute(reward, "data-y-ticks")).not.toBe("");

    // Hover: the legend shows the value at the step under the cursor, and the other panels follow.
    const plot = page.locator(`${reward} .u-over`);
    const box = await plot.boundingBox();
    await plot.hover({ position: { x: (box?.width ?? 100) - 2, y: (box?.height ?? 100) / 2 } });
    const values = page.locator(`${reward} .u-legend .u-series:not(.raw) .u-value`);
    await expect.poll(() => values.nth(0).textContent()).toBe("1");
    await expect.poll(() => values.nth(1).textContent()).toBe("0.7");
    expect(await page.locator(`${panel("train/loss")} .u-legend .u-series:not(.raw) .u-value`).nth(0).textContent()).toBe("1");
    await page.mouse.move(0, 0);

    // Smoothing redraws the series (the raw one stays behind, faint).
    const canvas = page.locator(`${reward} canvas`);
    const before = await canvas.screenshot();
    expect(await attribute(reward, "data-smoothed-last")).toBe("0.7");
    await page.fill('input[name="smoothing"]', "0.9");
    await page.waitForSelector(`${reward}[data-smoothing="0.9"]`);
    expect(Number(await attribute(reward, "data-smoothed-last"))).toBeLessThan(0.7);
    expect((await canvas.screenshot()).equals(before)).toBe(false);

    // A log scale where every value is above 0, not offered where one is 0.
    expect(await page.isHidden(`${panel("val/exception_rate")} .panel-log`)).toBe(true);
    await page.check(`${reward} input[name="log"]`);
    await page.waitForSelector(`${reward}[data-scale="log"]`);

    // Checkpoints: one column per metric under its chart name, integers as integers, a link to try each.
    await page.waitForSelector('.checkpoints-table th[data-metric="train/loss"]');
    const headers = await page.$$eval(".checkpoints-table th", (cells) => cells.map((cell) => cell.textContent));
    expect(headers).not.toContain("loss");
    expect(headers).toContain("train/grad_norm");
    expect(await page.textContent('.checkpoints-table tr[data-step="1"] td[data-metric="train/num_trajectories"]')).toBe("8");
    expect(await page.textContent('.checkpoints-table tr[data-step="1"] td[data-metric="train/num_gradient_steps"]')).toBe("8");
    expect(await page.getAttribute('a[data-try="1"]', "href")).toBe(`#/playground?model=${encodeURIComponent(`wandb-artifact:///runs-team/runs/alpha:step1`)}`);
    expect(await page.isVisible('button[data-download="runs/alpha:step1"]')).toBe(true);
    expect(await page.$('button[data-download="runs/alpha:step0"]')).toBeNull();
    // Jobs: a short id linking to the job, its status; the trajectories view is one click away.
    await page.waitForSelector('.jobs-table [data-status="succeeded"]');
    expect(await page.getAttribute(".jobs-table .short-id a", "href")).toMatch(/^#\/jobs\//);
    expect(await page.getAttribute(`a[href="#/models/${alpha.id}/trajectories"]`, "href")).toBeTruthy();

    // A refresh brings new data into the same charts, keeping smoothing and the log scale.
    await page.$eval(`${reward} .uplot`, (chart) => chart.setAttribute("data-kept", "yes"));
    const smoothedBefore = await attribute(reward, "data-smoothed-last");
    await logVal(alpha, [1, 1]);
    await expect.poll(() => attribute(reward, "data-smoothed-last"), { timeout: 15_000 }).not.toBe(smoothedBefore);
    expect(await page.getAttribute(`${reward} .uplot`, "data-kept")).toBe("yes");
    expect(await attribute(reward, "data-scale")).toBe("log");
    expect(await attribute(reward, "data-smoothing")).toBe("0.9");
    await screenshotBoth(page, "model", () => page.waitForSelector(`${reward} canvas`).then(() => undefined));
  });

  it("says what to do next where a model has nothing yet", async () => {
    const empty = await createModel("empty");
    await page.goto(`${url}/#/models/${empty.id}`);
    await page.waitForSelector(".charts-section [data-empty] pre.snippet");
    expect(await page.textContent(".charts-section [data-empty]")).toContain(`/preview/models/${empty.id}/log`);
    expect(await page.textContent("[data-empty]:has-text('No training jobs yet')")).toContain("/preview/training-jobs");
  });

  it("follows a job live, then links to the model and the checkpoint it made", async () => {
    const live = await createModel("live");
    // 30 groups of 4: 120 gradient steps (each step is one trajectory), long enough to watch here
    // and short enough for a loaded machine.
    const jobId = await train(live, await sampleGroups(live, 30, 16));
    await page.goto(`${url}/#/jobs/${jobId}`);
    const loss = panel("loss");
    await page.waitForSelector(`${loss}:not([data-points="0"])`, { timeout: 180_000 });
    const first = Number(await attribute(loss, "data-points"));
    // The curves gain points while the job runs.
    await expect.poll(async () => Number(await attribute(loss, "data-points")), { timeout: 180_000 }).toBeGreaterThan(first);
    expect(await page.textContent("[data-testid=steps]")).toMatch(/^\d+ of 120 gradient steps$/);
    expect(await page.isVisible(panel("grad_norm"))).toBe(true);
    await screenshotBoth(page, "job-live", () => page.waitForSelector(`${loss} canvas`).then(() => undefined));
    // The models list and the model page while the job runs (for the pictures: the job may have
    // finished by then on a fast machine, so nothing is asserted of its state here).
    await page.goto(`${url}/#/`);
    await page.waitForSelector(`tr[data-model-id="${live.id}"] td[data-col="job"] [data-status]`);
    await screenshotBoth(page, "models-live");
    await page.goto(`${url}/#/models/${live.id}`);
    await page.waitForSelector('.jobs-table [data-status]');
    await screenshotBoth(page, "model-live");
    await page.goto(`${url}/#/jobs/${jobId}`);

    await page.waitForSelector('.job-status [data-status="succeeded"]', { timeout: 300_000 });
    // The status comes from polling the job and the steps from its event stream: on a loaded
    // machine the last step's event may arrive just after the status shows "succeeded".
    await expect.poll(() => page.textContent("[data-testid=steps]"), { timeout: 30_000 }).toBe("120 of 120 gradient steps");
    expect(await attribute(loss, "data-points")).toBe("120");
    expect(await page.locator(".steps-table tbody tr").count()).toBe(120);
    expect(await page.textContent('.steps-table tbody tr[data-step="120"] td:first-child')).toBe("120");
    expect(await page.textContent('[data-fact="tokens-per-second"]')).toMatch(/^[\d,]+ tokens\/s$/);
    expect(await page.getAttribute('a[data-link="model"]', "href")).toBe(`#/models/${live.id}`);
    expect(await page.textContent('a[data-link="model"]')).toBe("runs/live");
    expect(await page.textContent('a[data-link="checkpoint"]')).toBe("step 1");
    expect(await page.getAttribute('a[data-link="try"]', "href")).toBe(`#/playground?model=${encodeURIComponent("wandb-artifact:///runs-team/runs/live:step1")}`);
    // The raw event log is there, folded.
    expect(await page.locator("details.event-log li[data-event=training_ended]").count()).toBe(1);
    expect(await page.getAttribute("details.event-log", "open")).toBeNull();
    await screenshotBoth(page, "job-done", () => page.waitForSelector(`${loss} canvas`).then(() => undefined));
  }, 480_000);

  it("shows a failed job's error in plain sight", async () => {
    const broken = await createModel("broken");
    // Accepted by the API, refused by the trainer: a sampled token id beyond the vocabulary.
    const groups = await sampleGroups(broken, 1, 8, (choices) => {
      const first = choices[0]?.logprobs.content[0];
      if (first) first.token = "token_id:99999999";
    });
    const jobId = await train(broken, groups);
    expect((await finished(jobId)).status).toBe("failed");
    await page.goto(`${url}/#/jobs/${jobId}`);
    await page.waitForSelector(".job-error:not([hidden])");
    expect(await page.textContent(".job-error")).toContain("sampled token token_id:99999999 is outside the base model's vocabulary");
    expect(await page.isVisible('.job-status [data-status="failed"]')).toBe(true);
    expect(await page.textContent("[data-testid=steps]")).toBe("failed before its first gradient step");
  });
});
