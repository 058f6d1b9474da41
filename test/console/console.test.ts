// The console in a real browser (Debian's Chromium driven by playwright-core) against a real
// server with a training worker: sign in, see a model, follow an RL job live, see the reward chart
// gain a point, stream a reply in the playground. Screenshots go to test/artifacts/.
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import type { ServerProcess } from "../support/server-process.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const artifacts = join(import.meta.dirname, "..", "artifacts");
let isolated: IsolatedServer;
let server: ServerProcess;
let browser: Browser;
let page: Page;
let key = "";
const rest = (method: string, path: string, body?: unknown) => restAt(method, path, { key, body, base: server.url });

beforeAll(async () => {
  await mkdir(artifacts, { recursive: true });
  isolated = await startIsolatedServer({ name: "console", entity: "console-team" });
  ({ server, key } = isolated);
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  page = await browser.newPage({ viewport: { width: 420, height: 900 } }); // a narrow window
});
afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("console", () => {
  it("signs in, shows a model, follows a job live, charts the reward and streams a reply", async () => {
    const model = (await rest("POST", "/v1/preview/models", { project: "web", name: "watched", base_model: "tiny-chat" })).body as { id: string; entity: string };
    await page.goto(server.url);
    await page.fill("input[name=key]", "srl_wrong");
    await page.click("button[type=submit]");
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.textContent("#error")).toContain("Invalid API key");
    await page.fill("input[name=key]", key);
    await page.click("button[type=submit]");
    await page.waitForSelector("text=watched");
    expect(await page.textContent("#who")).toContain("console-team");
    await page.screenshot({ path: join(artifacts, "models.png") });

    // A logged validation reward: the first point of the chart.
    await rest("POST", `/v1/preview/models/${model.id}/log`, { split: "val", trajectory_groups: [{ trajectories: [{ reward: 0.2 }, { reward: 0.4 }] }] });
    await page.click("text=watched");
    await page.waitForSelector('circle[data-point="val/reward@0"]');

    // An RL job started through the API, followed live on its page.
    const messages = [{ role: "user", content: "hi" }];
    const sampled = (await rest("POST", "/v1/chat/completions", { model: `wandb-artifact:///${model.entity}/web/watched`, messages, n: 4, temperature: 1, seed: 1, max_tokens: 8, logprobs: true, return_tokens_as_token_ids: true })).body as { choices: unknown[] };
    const groups = [{ trajectories: sampled.choices.map((choice, i) => ({ messages_and_choices: [...messages, choice], reward: i / 4 })) }];
    const job = (await rest("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.001 } })).body as { id: string };
    await page.goto(`${server.url}/#/jobs/${job.id}`);
    await page.waitForSelector('tr[data-event="training_started"]');
    await page.waitForSelector('tr[data-event="training_ended"]', { timeout: 120_000 });
    expect(await page.textContent("[data-testid=steps]")).toMatch(/^(\d+) of \1 steps$/);
    await page.waitForSelector('[data-status="succeeded"]');
    await page.screenshot({ path: join(artifacts, "job.png") });

    // Logged at the new step: the chart gains a point.
    await rest("POST", `/v1/preview/models/${model.id}/log`, { split: "val", trajectory_groups: [{ trajectories: [{ reward: 0.6 }, { reward: 0.8 }] }] });
    await page.goto(`${server.url}/#/models/${model.id}`);
    await page.waitForSelector('circle[data-point="val/reward@1"]');
    expect(await page.locator('circle[data-point^="val/reward@"]').count()).toBe(2);
    await page.screenshot({ path: join(artifacts, "model.png"), fullPage: true });

    // The new checkpoint's adapter downloads from the model page.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click('button[data-download="web/watched:step1"]')]);
    expect(download.suggestedFilename()).toBe("watched-step1.gguf");
    const saved = join(artifacts, "watched-step1.gguf");
    await download.saveAs(saved);
    expect((await readFile(saved)).subarray(0, 4).toString("latin1")).toBe("GGUF");

    // The playground streams a reply from the new checkpoint.
    await page.goto(`${server.url}/#/playground`);
    await page.fill("input[name=model]", `wandb-artifact:///${model.entity}/web/watched`);
    await page.click("button[type=submit]");
    await page.waitForFunction("(document.querySelector('[data-testid=output]')?.textContent ?? '').length > 0");
    await page.screenshot({ path: join(artifacts, "playground.png") });

    // Errors are shown to the person, readably.
    await page.fill("input[name=model]", "no-such-model");
    await page.click("button[type=submit]");
    await page.waitForSelector("#error:not([hidden])");
    expect(await page.textContent("#error")).toContain("The model `no-such-model` does not exist.");
  }, 180000);
});
