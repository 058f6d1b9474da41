// The console in a real browser (Debian's Chromium driven by playwright-core) against a real
// server with a training worker: a wrong key is refused readably, signing in shows the models, the
// reward panel (uPlot) gains a point after a job, hovering reads values off it, and the new
// checkpoint's adapter downloads as a GGUF file. (runs.test.ts takes the screenshots.)
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { DESKTOP, launchBrowser } from "../support/console-browser.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let isolated: IsolatedServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let url = "";
let key = "";
const rest = (method: string, path: string, body?: unknown) => restAt(method, path, { key, body, base: url });

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "console", entity: "console-team" });
  url = isolated.server.url;
  key = isolated.key;
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
  page = await context.newPage();
});
afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("console", () => {
  it("signs in, charts a run with uPlot, follows its job and downloads the adapter", async () => {
    const model = (await rest("POST", "/v1/preview/models", { project: "web", name: "watched", base_model: "tiny-chat" })).body as { id: string; entity: string };

    // A wrong key is refused, readably; the right one signs in and shows the models.
    await page.goto(url);
    await page.fill("input[name=key]", "srl_wrong");
    await page.click("button[type=submit]");
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.textContent("#error")).toContain("Invalid API key");
    await page.fill("input[name=key]", key);
    await page.click("button[type=submit]");
    await page.waitForSelector("a.model-name:has-text('watched')");
    expect(await page.textContent("#who")).toContain("console-team");
    expect(await page.isHidden("#error")).toBe(true);

    // A logged validation reward: the first point of the reward panel.
    await rest("POST", `/v1/preview/models/${model.id}/log`, { split: "val", trajectory_groups: [{ trajectories: [{ reward: 0.2 }, { reward: 0.4 }] }] });
    await page.click("a.model-name:has-text('watched')");
    const reward = '.panel[data-metric="val/reward"]';
    await page.waitForSelector(`${reward}[data-points="1"]`);

    // An RL job started through the API, followed on its page to the end.
    const messages = [{ role: "user", content: "hi" }];
    const sampled = (await rest("POST", "/v1/chat/completions", { model: `wandb-artifact:///${model.entity}/web/watched`, messages, n: 4, temperature: 1, seed: 1, max_tokens: 8, logprobs: true, return_tokens_as_token_ids: true })).body as { choices: unknown[] };
    const groups = [{ trajectories: sampled.choices.map((choice, i) => ({ messages_and_choices: [...messages, choice], reward: i / 4 })) }];
    const job = (await rest("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.001 } })).body as { id: string };
    await page.goto(`${url}/#/jobs/${job.id}`);
    await page.waitForSelector('.job-status [data-status="succeeded"]', { timeout: 120_000 });
    await page.waitForSelector("details.event-log li[data-event=training_ended]", { state: "attached" });
    expect(await page.textContent("[data-testid=steps]")).toMatch(/^(\d+) of \1 gradient steps$/);
    expect(await page.isVisible('.panel[data-metric="loss"]')).toBe(true);

    // Logged at the new step: the reward panel gains a point, with step ticks and value ticks drawn.
    await rest("POST", `/v1/preview/models/${model.id}/log`, { split: "val", trajectory_groups: [{ trajectories: [{ reward: 0.6 }, { reward: 0.8 }] }] });
    await page.goto(`${url}/#/models/${model.id}`);
    await page.waitForSelector(`${reward}[data-points="2"]`);
    expect((await page.getAttribute(reward, "data-x-ticks"))?.split(" ")).toEqual(expect.arrayContaining(["0", "1"]));
    expect(await page.getAttribute(reward, "data-y-ticks")).toMatch(/\d/);
    // Hovering the first step shows its value (the mean reward 0.3) in the panel's legend.
    const plot = page.locator(`${reward} .u-over`);
    await plot.hover({ position: { x: 2, y: 20 } });
    const legend = page.locator(`${reward} .u-legend .u-series:not(.raw) .u-value`);
    await expect.poll(() => legend.nth(0).textContent()).toBe("0");
    await expect.poll(() => legend.nth(1).textContent()).toBe("0.3");

    // The new checkpoint's adapter downloads from the model page.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click('button[data-download="web/watched:step1"]')]);
    expect(download.suggestedFilename()).toBe("watched-step1.gguf");
    const saved = join(isolated.dataDir, "watched-step1.gguf");
    await download.saveAs(saved);
    expect((await readFile(saved)).subarray(0, 4).toString("latin1")).toBe("GGUF");
  }, 180_000);
});
