// The console's layout in Chromium against a server of its own with a training worker: curves with
// one point draw it as a marker on a step axis of whole steps, a comparison of five runs groups its
// panels and tells runs apart by marker shape even where their values are equal, the trajectory
// browser labels each group's mean, a stale sign-in error goes once the key is edited, the header
// keeps its height through sign-in, the favicon is served, and errors say what to do next (sign
// in again, back to the models, retry in a moment).
// Screenshots at 1280 and 420 px go to test/artifacts/console/.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { consoleErrors, DESKTOP, launchBrowser, PHONE, screenshotBoth, signedInPage } from "../support/console-browser.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

interface Model {
  id: string;
  entity: string;
  project: string;
  name: string;
}

let isolated: IsolatedServer;
let browser: Browser;
let page: Page;
let errors: string[] = [];
let url = "";
let key = "";
let solo: Model;
const others: Model[] = [];

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await restAt(method, path, { key, body, base: url });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${response.text}`);
  return response.body as T;
}

const createModel = (name: string) => api<Model>("POST", "/v1/preview/models", { project: "layout", name, base_model: "tiny-chat" });
const logRewards = (model: Model, split: string, rewards: number[]) => api("POST", `/v1/preview/models/${model.id}/log`, { split, trajectory_groups: [{ trajectories: rewards.map((reward) => ({ messages_and_choices: [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }], reward })) }] });

/** One RL job of one group of 4 sampled replies: the model's first (and only) training step. */
async function trainOnce(model: Model): Promise<void> {
  const messages = [{ role: "user", content: "Say something." }];
  const sampled = await api<{ choices: unknown[] }>("POST", "/v1/chat/completions", {
    model: `wandb-artifact:///${model.entity}/${model.project}/${model.name}`,
    messages,
    n: 4,
    temperature: 1,
    seed: 1,
    max_tokens: 8,
    logprobs: true,
    return_tokens_as_token_ids: true,
  });
  const groups = [{ trajectories: sampled.choices.map((choice, i) => ({ messages_and_choices: [...messages, choice], reward: i / 4 })) }];
  const job = await api<{ id: string }>("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.0001 } });
  for (;;) {
    const state = await api<{ status: string }>("GET", `/v1/preview/training-jobs/${job.id}`);
    if (state.status === "failed") throw new Error(`job ${job.id} failed`);
    if (state.status === "succeeded") return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const panel = (metric: string) => `.panel[data-metric="${metric}"]`;
const headerHeight = async (on: Page) => (await on.locator("body > header").boundingBox())?.height ?? 0;

/** The part of a canvas element this file reads (the test's own types have no DOM). */
interface PixelCanvas {
  width: number;
  height: number;
  getContext(kind: "2d"): { getImageData(x: number, y: number, width: number, height: number): { data: ArrayLike<number> } } | null;
}

/** Pixels of the panel's canvas near `rgb` (markers and lines of that colour; the grid is grey). */
function pixelsOf(on: Page, selector: string, rgb: [number, number, number]): Promise<number> {
  return on.$eval(
    `${selector} canvas`,
    (canvas, [r, g, b]) => {
      const pixels = canvas as unknown as PixelCanvas;
      const context = pixels.getContext("2d");
      if (!context) return 0;
      const { data } = context.getImageData(0, 0, pixels.width, pixels.height);
      let count = 0;
      for (let i = 0; i < data.length; i += 4) {
        if (Math.abs((data[i] ?? 0) - r) < 40 && Math.abs((data[i + 1] ?? 0) - g) < 40 && Math.abs((data[i + 2] ?? 0) - b) < 40 && (data[i + 3] ?? 0) > 200) count++;
      }
      return count;
    },
    rgb,
  );
}

// The palette's first five colours (console/src/charts/palette.ts), one per run in order.
const RUN_COLOURS: [number, number, number][] = [
  [0x2f, 0x5b, 0xea],
  [0xe0, 0x70, 0x3a],
  [0x2a, 0x9d, 0x5c],
  [0x9b, 0x4d, 0xca],
  [0xc7, 0x38, 0x5a],
];

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "layout", entity: "layout-team" });
  url = isolated.server.url;
  key = isolated.key;
  solo = await createModel("solo");
  for (const name of ["twin-a", "twin-b", "twin-c", "twin-d"]) others.push(await createModel(name));
  // Every run logs the same validation rewards at step 0: five identical points.
  await Promise.all([solo, ...others].map((model) => logRewards(model, "val", [0.25, 0.75])));
  await Promise.all(others.map((model) => logRewards(model, "train", [0, 1])));
  await trainOnce(solo);
  browser = await launchBrowser();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("console layout", () => {
  it("serves a favicon, keeps the header's height through sign-in and clears a stale sign-in error", async () => {
    const favicon = await fetch(`${url}/favicon.svg`);
    expect(favicon.status).toBe(200);
    expect(favicon.headers.get("content-type")).toBe("image/svg+xml");
    expect(await favicon.text()).toContain("<svg");

    const context = await browser.newContext({ viewport: DESKTOP });
    const fresh = await context.newPage();
    const loading = consoleErrors(fresh);
    const icons: number[] = [];
    fresh.on("response", (response) => {
      if (/favicon/.test(response.url())) icons.push(response.status());
    });
    await fresh.goto(url);
    await fresh.waitForSelector("input[name=key]");
    expect(await fresh.getAttribute('link[rel="icon"]', "href")).toBe("/favicon.svg");
    expect(icons.every((status) => status === 200)).toBe(true);
    expect(loading).toEqual([]);
    const before = { desktop: await headerHeight(fresh), phone: 0 };
    await fresh.setViewportSize(PHONE);
    before.phone = await headerHeight(fresh);
    await fresh.setViewportSize(DESKTOP);

    // A wrong key: refused with what to do; editing the key takes the stale message away.
    await fresh.fill("input[name=key]", "srl_wrong");
    await fresh.click("button[type=submit]");
    await fresh.waitForSelector("#error:not([hidden])");
    expect(await fresh.textContent("#error")).toContain("Invalid API key");
    expect(await fresh.textContent("#error")).toContain("Check the key");
    await fresh.locator("input[name=key]").press("End");
    await fresh.keyboard.type("x");
    expect(await fresh.isHidden("#error")).toBe(true);
    await fresh.fill("input[name=key]", key);
    await fresh.keyboard.press("Enter");
    await fresh.waitForSelector("#who:has-text('signed in as layout-team')");
    expect(await fresh.isHidden("#error")).toBe(true);
    expect(await headerHeight(fresh)).toBe(before.desktop);
    await fresh.setViewportSize(PHONE);
    expect(await headerHeight(fresh)).toBe(before.phone);
    // The only console errors: the wrong key's 401.
    expect(loading.filter((error) => !/status of 401/.test(error))).toEqual([]);
    await context.close();
  });

  it("draws a model's single points as markers on whole steps after one job", async () => {
    page = await signedInPage(browser, url, key);
    errors = consoleErrors(page);
    await page.goto(`${url}/#/models/${solo.id}`);
    const loss = panel("train/loss");
    await page.waitForSelector(`${loss}[data-points="1"][data-markers="shown"]`);
    expect(await page.getAttribute(loss, "data-single")).toBe("true");
    expect(await page.textContent(`${loss} .panel-latest`)).toMatch(/ at step 1$/);
    // The one step is the axis' one tick: no 0.5, no padding to 0..10.
    expect(await page.getAttribute(loss, "data-x-ticks")).toBe("1");
    // A point with no line to draw is still there: the run's colour fills its marker.
    expect(await pixelsOf(page, loss, RUN_COLOURS[0] as [number, number, number])).toBeGreaterThan(20);
    // A one-point panel is drawn short; a panel of a real curve keeps its height.
    const short = (await page.locator(`${loss} canvas`).boundingBox())?.height ?? 0;
    expect(short).toBeLessThan(170);
    // Every panel's x ticks are whole steps.
    const ticks = await page.$$eval(".panel", (panels) => panels.map((p) => p.getAttribute("data-x-ticks") ?? ""));
    for (const list of ticks.filter(Boolean)) expect(list.split(" ").every((tick: string) => /^\d+$/.test(tick))).toBe(true);
    // Panels come in families under headings: validation, then training.
    expect(await page.locator(".run-charts > .panel-groups > .panel-group").evaluateAll((groups) => groups.map((g) => g.getAttribute("data-group")))).toEqual(["val", "train"]);
    expect(await page.textContent('.panel-group[data-group="val"] .panel-group-title')).toMatch(/^Validation \(\d+\)$/);
    await screenshotBoth(page, "layout-model-one-job", () => page.waitForSelector(`${loss} canvas`).then(() => undefined));
    expect(errors).toEqual([]);
  });

  it("compares five runs: grouped panels, a shape and dash per run, equal values side by side", async () => {
    const runs = [solo, ...others];
    await page.goto(`${url}/#/compare?models=${runs.map((model) => model.id).join(",")}`);
    const reward = panel("val/reward");
    await page.waitForSelector(`${reward}[data-runs="5"][data-points="5"][data-markers="shown"]`);
    expect(await page.getAttribute(reward, "data-marker-shapes")).toBe("circle square triangle diamond triangle-down");
    // Equal values at the same step: each run's marker still shows (shifted a few pixels apart).
    const counts = await Promise.all(RUN_COLOURS.map((colour) => pixelsOf(page, reward, colour)));
    for (const count of counts) expect(count).toBeGreaterThan(15);
    // The legend names each run beside its marker; the list of runs above shows the same markers.
    const legend = page.locator(`${reward} .u-legend .u-series:not(.raw)`);
    const names = await legend.allTextContents();
    for (const name of ["solo", "twin-a", "twin-b", "twin-c", "twin-d"]) expect(names.some((text) => text.includes(name))).toBe(true);
    const shapes = await page.locator(`${reward} .u-legend .marker-icon`).evaluateAll((icons) => icons.map((icon) => icon.getAttribute("data-shape")));
    expect(new Set(shapes).size).toBe(5);
    expect(await page.locator(".run-keys .marker-icon").count()).toBe(5);
    // Families under headings, the long tail folded.
    expect(await page.isVisible('.panel-group[data-group="val"] .panel-group-title')).toBe(true);
    expect(await page.isVisible('.panel-group[data-group="train"] .panel-group-title')).toBe(true);
    expect(await page.getAttribute("details.more-metrics", "open")).toBeNull();
    expect(await page.textContent("details.more-metrics > summary")).toMatch(/^More metrics \(\d+\)$/);
    // Single points at one step: the values written out too.
    expect(await page.textContent(`${reward} .panel-latest`)).toBe("step 0: solo 0.5, twin-a 0.5, twin-b 0.5, twin-c 0.5, twin-d 0.5");
    await screenshotBoth(page, "layout-compare", () => page.waitForSelector(`${reward} canvas`).then(() => undefined));
    expect(errors).toEqual([]);
  });

  it("labels each group's mean in the trajectory browser", async () => {
    await page.goto(`${url}/#/models/${solo.id}/trajectories`);
    await page.click("button[data-split=val]");
    const card = page.locator(".group-card").first();
    await card.waitFor();
    expect(await card.locator("[data-testid=mean-label]").textContent()).toBe("mean 0.5");
    expect(await card.locator(".spread").getAttribute("aria-label")).toBe("rewards 0.25, 0.75, on a scale from 0.25 to 0.75, mean 0.5");
    expect(await card.getByRole("img", { name: /mean 0\.5/ }).count()).toBe(1);
    // Each reward in a row reads as one ("reward 0.75"), not a bare number.
    expect(await card.locator(".reward-pill").first().textContent()).toBe("reward 0.75");
    await screenshotBoth(page, "layout-trajectories");
    expect(errors).toEqual([]);
  });

  it("says what to do next: back for a missing model, sign in again for a refused key", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    await page.goto(`${url}/#/models/${missing}/trajectories`);
    await page.waitForSelector("#error:not([hidden]) [data-next-step=back]");
    expect(await page.getAttribute("#error [data-next-step=back] a", "href")).toBe("#/");
    // A key revoked (here: replaced) while signed in: the banner offers to sign in again.
    await page.evaluate("sessionStorage.setItem('srl-api-key', 'srl_revoked')");
    await page.goto(`${url}/#/compare?models=${solo.id}`);
    await page.reload();
    const again = page.getByRole("button", { name: "Sign in again" });
    await again.waitFor();
    await again.click();
    await page.waitForSelector("input[name=key]");
    expect(await page.isHidden("#error")).toBe(true);
    expect(errors.filter((error) => !/status of (401|404)/.test(error))).toEqual([]);
  });

  // Last: it stops the server.
  it("says to retry in a moment when the server cannot be reached", async () => {
    page = await signedInPage(browser, url, key);
    const unreachable = consoleErrors(page);
    await page.goto(`${url}/#/`);
    await isolated.server.stop();
    await page.evaluate(`location.hash = "#/compare?models=${solo.id}"`);
    await page.waitForSelector("#error:not([hidden]) [data-next-step=retry]");
    expect(await page.textContent("#error")).toContain("retry in a moment");
    expect(await page.getByRole("button", { name: "Retry" }).isVisible()).toBe(true);
    expect(unreachable.filter((error) => !/ERR_CONNECTION_(REFUSED|RESET)/.test(error))).toEqual([]);
  });
});
