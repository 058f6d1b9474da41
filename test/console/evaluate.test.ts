// The evaluate view in Chromium against a real server with a training worker: a model with a step
// 1 (a real RL job), a prompt set pasted and checked in the page, steps 0 and 1 run side by side
// with exact match and with a regex, each score equal to what the shown outputs give, the result
// saved with the model (listed, reopened after a reload) and deleted after a confirmation dialog.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { consoleErrors, launchBrowser, screenshotBoth, signedInPage } from "../support/console-browser.js";
import { sampledGroup } from "../support/sampled-group.js";
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
let errors: string[];
let url = "";
let key = "";
let model: Model;
/** What step 0 answers greedily to the first prompt (8 tokens): an expected answer it meets. */
let greedyStep0 = "";

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await restAt(method, path, { key, body, base: url });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${response.text}`);
  return response.body as T;
}

const PROMPTS = ["Say hello.", "Name a colour.", "Count to three."];
const MAX_TOKENS = 8;

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "evaluate", entity: "eval-team" });
  url = isolated.server.url;
  key = isolated.key;
  model = await api<Model>("POST", "/v1/preview/models", { project: "evals", name: "judged", base_model: "tiny-chat" });
  // A real RL job makes step 1.
  const groups = [await sampledGroup({ base: url, key, model: `wandb-artifact:///${model.entity}/evals/judged`, prompt: "hi", seed: 1 })];
  const job = await api<{ id: string }>("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.001 } });
  for (;;) {
    const state = await api<{ status: string; error_message?: string }>("GET", `/v1/preview/training-jobs/${job.id}`);
    if (state.status === "succeeded") break;
    if (state.status === "failed" || state.status === "cancelled") throw new Error(`the RL job ${state.status}: ${state.error_message ?? ""}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const greedy = await api<{ choices: { message: { content: string } }[] }>("POST", "/v1/chat/completions", { model: `wandb-artifact:///${model.entity}/evals/judged:step0`, messages: [{ role: "user", content: PROMPTS[0] }], temperature: 0, max_tokens: MAX_TOKENS });
  greedyStep0 = greedy.choices[0]?.message.content ?? "";
  browser = await launchBrowser();
  page = await signedInPage(browser, url, key);
  errors = consoleErrors(page);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

interface Shown {
  expected: string[];
  /** Per step shown, per row: the output text, whether it is marked passed, and its mark. */
  outputs: Map<number, { text: string; passed: boolean; mark: string }[]>;
  scores: Map<number, { passed: number; total: number; text: string }>;
}

/** The result as the page shows it (read through locators: the rows in order). */
async function shownResult(): Promise<Shown> {
  const result = page.locator(".ev-result");
  const expected = await result.locator("tbody tr td[data-label=Expected]").allTextContents();
  const outputs = new Map<number, { text: string; passed: boolean; mark: string }[]>();
  const scores = new Map<number, { passed: number; total: number; text: string }>();
  for (const score of await result.locator("[data-score-step]").all()) {
    const step = Number(await score.getAttribute("data-score-step"));
    scores.set(step, { passed: Number(await score.getAttribute("data-passed")), total: Number(await score.getAttribute("data-total")), text: (await score.textContent()) ?? "" });
    const cells = result.locator(`td[data-output-step="${step}"] .ev-output`);
    const list = [];
    for (const cell of await cells.all()) {
      list.push({ text: (await cell.locator("[data-output]").textContent()) ?? "", passed: (await cell.getAttribute("data-passed")) === "true", mark: (await cell.locator(".ev-mark").textContent()) ?? "" });
    }
    outputs.set(step, list);
  }
  return { expected, outputs, scores };
}

/** Recomputes each step's score from the shown outputs with `passes`, and checks marks and scores agree. */
function checkScores(shown: Shown, passes: (output: string, expected: string) => boolean): Map<number, number> {
  const recomputed = new Map<number, number>();
  expect([...shown.scores.keys()]).toEqual([0, 1]);
  for (const [step, outputs] of shown.outputs) {
    expect(outputs).toHaveLength(PROMPTS.length);
    outputs.forEach((output, row) => {
      expect(output.passed, `step ${step} row ${row}: ${JSON.stringify(output.text)}`).toBe(passes(output.text, shown.expected[row] ?? ""));
      expect(output.mark).toBe(output.passed ? "✓ pass" : "✗ fail");
    });
    const passed = outputs.filter((output) => output.passed).length;
    recomputed.set(step, passed);
    const score = shown.scores.get(step);
    expect(score).toMatchObject({ passed, total: PROMPTS.length });
    expect(score?.text).toContain(`${passed} of ${PROMPTS.length} passed`);
    expect(score?.text).toContain(`${((passed / PROMPTS.length) * 100).toFixed(passed === 0 || passed === PROMPTS.length ? 0 : 1)}%`);
  }
  return recomputed;
}

async function runAndWait(prompts: number, previous: string | null): Promise<string> {
  // The click and the state right after it, in one turn of the page (the run may end quickly); a
  // string, as this file is type-checked without the DOM's types.
  const busy = await page.evaluate(`(() => {
    const button = document.querySelector("button.ev-run");
    button.click();
    return { disabled: button.disabled, status: document.querySelector(".ev-run-status").textContent };
  })()`);
  expect(busy).toEqual({ disabled: true, status: `Running ${prompts} prompts on 2 checkpoints…` });
  await page.waitForSelector(previous ? `.ev-result:not([data-evaluation-id="${previous}"])` : ".ev-result", { timeout: 60_000 });
  await page.waitForSelector("button.ev-run:not([disabled])");
  return (await page.getAttribute(".ev-result", "data-evaluation-id")) ?? "";
}

describe("evaluate view", () => {
  it("runs a pasted prompt set on steps 0 and 1 with exact match and a regex, saves, reopens and deletes", async () => {
    await page.goto(`${url}/#/models/${model.id}/evaluate`);
    await page.getByRole("heading", { name: "Evaluate evals/judged" }).waitFor();
    // Defaults: the step before the newest (the base) beside the newest.
    expect(await page.getByLabel("Checkpoint A").inputValue()).toBe("0");
    expect(await page.getByLabel("Checkpoint B").inputValue()).toBe("1");

    // Checked in the page: a broken line names its line; exact match wants "expected" everywhere.
    const prompts = page.getByLabel("Prompts", { exact: true });
    await prompts.fill(`${JSON.stringify({ prompt: PROMPTS[0], expected: greedyStep0 })}\n{"prompt": 3}`);
    await page.waitForSelector(".ev-check-line.bad");
    expect(await page.textContent(".ev-check-line")).toContain('Line 2: needs "prompt", a non-empty string.');
    await prompts.fill(`${JSON.stringify({ prompt: PROMPTS[0], expected: greedyStep0 })}\n${PROMPTS[1]}\n${PROMPTS[2]}`);
    expect(await page.textContent(".ev-check-line")).toContain('2 without "expected"');
    await page.click("button.ev-run");
    expect(await page.textContent(".ev-problems")).toContain('Exact match needs "expected" on every prompt; 2 of 3 have none.');
    const lines = [{ prompt: PROMPTS[0], expected: greedyStep0 }, { prompt: PROMPTS[1], expected: "red" }, { prompt: PROMPTS[2], expected: "1, 2, 3" }];
    await prompts.fill(lines.map((line) => JSON.stringify(line)).join("\n"));
    expect(await page.isHidden(".ev-problems")).toBe(true);
    expect(await page.textContent(".ev-check-line")).toBe("✓ 3 prompts, 3 with an expected answer.");
    await page.getByLabel("Max tokens").fill(String(MAX_TOKENS));
    await page.locator("h1").scrollIntoViewIfNeeded();
    await screenshotBoth(page, "evaluate-form");

    // Exact match on steps 0 and 1.
    const exactId = await runAndWait(3, null);
    expect(await page.isHidden(".ev-problems")).toBe(true);
    const exact = await shownResult();
    expect(exact.expected).toEqual(lines.map((line) => line.expected));
    const exactScores = checkScores(exact, (output, expected) => output.trim() === expected.trim());
    // The first prompt's expected answer is what step 0 says greedily: the page ran it the same way.
    expect(exact.outputs.get(0)?.[0]?.text).toBe(greedyStep0);
    expect(exactScores.get(0)).toBeGreaterThanOrEqual(1);
    // A failure says why.
    const failures = await page.locator(".ev-output.fail .ev-reason").count();
    expect(failures).toBe(2 * 3 - (exactScores.get(0) ?? 0) - (exactScores.get(1) ?? 0));
    await screenshotBoth(page, "evaluate");

    // A regular expression with a flag, on the same prompts uploaded as a file (shown, checked).
    await prompts.fill("");
    await page.getByLabel("Or upload a file").setInputFiles({ name: "prompts.jsonl", mimeType: "application/jsonl", buffer: Buffer.from(lines.map((line) => JSON.stringify(line)).join("\n")) });
    await expect.poll(() => prompts.inputValue()).toBe(lines.map((line) => JSON.stringify(line)).join("\n"));
    expect(await page.textContent(".ev-check-line")).toBe("✓ 3 prompts, 3 with an expected answer.");
    await page.getByLabel("Score each output by").selectOption("regex");
    const pattern = "^[a-m]";
    await page.getByLabel("Pattern").fill("[oops");
    await page.click("button.ev-run");
    expect(await page.textContent(".ev-problems")).toContain("The regular expression does not compile");
    await page.getByLabel("Pattern").fill(pattern);
    await page.getByLabel("i ignore case").check();
    await page.getByLabel("Name (optional)").fill("starts a-m");
    const regexId = await runAndWait(3, exactId);
    expect(regexId).not.toBe(exactId);
    const regex = await shownResult();
    checkScores(regex, (output) => new RegExp(pattern, "i").test(output));
    expect(await page.textContent(".ev-result .ev-facts")).toContain("regex /^[a-m]/i");

    // Both saved with the model, newest first; a reload reopens the one in the URL.
    const saved = page.locator(".ev-saved tbody tr");
    await expect.poll(() => saved.count()).toBe(2);
    expect(await saved.nth(0).getAttribute("data-saved-id")).toBe(regexId);
    expect(await saved.nth(0).textContent()).toContain("starts a-m");
    await page.reload();
    await page.waitForSelector(`.ev-result[data-evaluation-id="${regexId}"]`);
    expect((await shownResult()).outputs).toEqual(regex.outputs);
    // Opening the other from the list shows its outputs again.
    await page.locator(`.ev-saved tr[data-saved-id="${exactId}"] td:first-child button`).click();
    await page.waitForSelector(`.ev-result[data-evaluation-id="${exactId}"]`);
    expect((await shownResult()).outputs).toEqual(exact.outputs);
    expect(page.url()).toContain(`evaluation=${exactId}`);

    // Delete asks first in a dialog naming it; Escape keeps it, the dialog's button deletes it.
    await page.getByRole("button", { name: "Delete starts a-m" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain("starts a-m");
    expect(await page.locator(":focus").textContent()).toBe("Cancel");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    expect(await saved.count()).toBe(2);
    await page.getByRole("button", { name: "Delete starts a-m" }).click();
    await dialog.getByRole("button", { name: "Delete evaluation" }).click();
    await expect.poll(() => saved.count()).toBe(1);
    expect(await saved.nth(0).getAttribute("data-saved-id")).toBe(exactId);
    const listed = await api<{ data: { id: string }[] }>("GET", `/v1/preview/models/${model.id}/evaluations`);
    expect(listed.data.map((evaluation) => evaluation.id)).toEqual([exactId]);
    expect((await restAt("GET", `/v1/preview/evaluations/${regexId}`, { key, base: url })).status).toBe(404);
    await screenshotBoth(page, "evaluate-saved");
    expect(errors).toEqual([]);
  }, 180_000);
});
