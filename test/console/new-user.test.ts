// The console's main flow as a new user does it, with the keyboard only (Tab, typing, Enter,
// Escape; no clicks): sign in, register a model, paste and upload SFT data, train it, chat the
// new step in the playground, evaluate step 0 against step 1, delete the model. Every result is
// read back through the API; the page logs no error; screenshots of each stage at 1280 and 420 px
// go to test/artifacts/console/new-user-*. (Each view's own file tests its details.)
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { consoleErrors, DESKTOP, launchBrowser, screenshotBoth, tabTo } from "../support/console-browser.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let isolated: IsolatedServer;
let browser: Browser;
let page: Page;
let errors: string[];
let url = "";
let key = "";

const api = async <T>(method: string, path: string): Promise<{ status: number; body: T }> => {
  const response = await restAt(method, path, { key, base: url });
  return { status: response.status, body: response.body as T };
};

/** Tab to `selector` and press Enter on it. */
async function activate(selector: string): Promise<void> {
  await tabTo(page, selector);
  await page.keyboard.press("Enter");
}

const SFT_LINES = [
  { messages: [{ role: "user", content: "What is the capital of France?" }, { role: "assistant", content: "Paris" }] },
  { messages: [{ role: "user", content: "2+2?" }, { role: "assistant", content: "4" }] },
  { messages: [{ role: "user", content: "Colour of the sky?" }, { role: "assistant", content: "Blue" }] },
];
const EVAL_LINES = [
  { prompt: "What is the capital of France?", expected: "Paris" },
  { prompt: "2+2?", expected: "4" },
];

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "new-user", entity: "newcomer" });
  url = isolated.server.url;
  key = isolated.key;
  browser = await launchBrowser();
  const context = await browser.newContext({ viewport: DESKTOP });
  page = await context.newPage();
  errors = consoleErrors(page);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("a new user's first model, keyboard only", () => {
  it("signs in, registers, uploads, trains, chats the new step, evaluates two steps and deletes", async () => {
    // Sign in.
    await page.goto(url);
    await tabTo(page, "input[name=key]");
    await page.keyboard.type(key);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#who:has-text('signed in as newcomer')");

    // Register a model from the empty list: project, name, the first base (chosen by default).
    await page.waitForSelector("[data-empty]");
    await screenshotBoth(page, "new-user-empty");
    await activate('[data-empty] button[data-action="new-model"]');
    await page.waitForSelector("dialog.new-model-dialog[open] input[name=base]");
    await page.keyboard.type("first");
    await page.keyboard.press("Tab");
    await page.keyboard.type("helper");
    await page.keyboard.press("Enter");
    await page.waitForURL(/#\/models\/[0-9a-f-]{36}$/);
    const modelId = new URL(page.url()).hash.split("/")[2] ?? "";
    const model = (await api<{ project: string; name: string; entity: string }>("GET", `/v1/preview/models/${modelId}`)).body;
    expect(model).toMatchObject({ project: "first", name: "helper", entity: "newcomer" });
    await page.waitForSelector("h1:has-text('first/helper')");

    // Train: paste JSONL (checked in the page), upload it, start an SFT job with Enter.
    await activate(`a[href="#/models/${modelId}/train"]`);
    await page.waitForSelector("#train-paste");
    await tabTo(page, "#train-paste");
    await page.keyboard.type(SFT_LINES.map((line) => JSON.stringify(line)).join("\n"));
    await expect.poll(() => page.textContent(".check-summary")).toContain("Ready to upload");
    await activate('.train-actions button:has-text("Upload")');
    await page.waitForSelector(".uploaded:not([hidden])");
    expect(await page.textContent("[data-testid=upload-percent]")).toBe("100%");
    expect(await page.inputValue("#sft-data")).toBe("wandb-artifact:///newcomer/first/helper-sft:v0");
    await screenshotBoth(page, "new-user-uploaded", () => page.locator(".uploaded").scrollIntoViewIfNeeded());
    await tabTo(page, "#sft-learning-rate");
    await page.keyboard.type("1e-3");
    await page.keyboard.press("Enter");
    await page.waitForURL(/#\/jobs\//);
    await page.waitForSelector('.job-status [data-status="succeeded"]', { timeout: 120_000 });
    await screenshotBoth(page, "new-user-job");
    const checkpoints = (await api<{ data: { step: number }[] }>("GET", `/v1/preview/models/${modelId}/checkpoints`)).body;
    expect(checkpoints.data.map((checkpoint) => checkpoint.step)).toContain(1);

    // Chat the new step: from the model page's "try this step" to the playground, Ctrl+Enter sends.
    await activate(`a[href="#/models/${modelId}"]`);
    await page.waitForSelector('.checkpoints-table tr[data-step="1"]');
    await activate('a[data-try="1"]');
    await page.waitForURL(/#\/playground\?model=/);
    expect(decodeURIComponent(page.url())).toContain("wandb-artifact:///newcomer/first/helper:step1");
    await tabTo(page, "textarea[name=prompt]");
    await page.keyboard.press("Control+A");
    await page.keyboard.type("What is the capital of France?");
    await page.keyboard.press("Control+Enter");
    await page.waitForSelector("[data-column=a][data-run='1'][data-state=finished]", { timeout: 60_000 });
    expect(await page.inputValue("textarea[name=prompt]")).toBe("What is the capital of France?");
    await screenshotBoth(page, "new-user-chat");

    // Evaluate step 0 against step 1 with exact match on a pasted prompt set.
    await activate('header nav a[href="#/"]');
    await activate("a.model-name");
    await activate(`a[href="#/models/${modelId}/evaluate"]`);
    await page.waitForSelector("#ev-prompts");
    expect(await page.getByLabel("Checkpoint A").inputValue()).toBe("0");
    expect(await page.getByLabel("Checkpoint B").inputValue()).toBe("1");
    await tabTo(page, "#ev-prompts");
    await page.keyboard.type(EVAL_LINES.map((line) => JSON.stringify(line)).join("\n"));
    await activate("button.ev-run");
    await page.waitForSelector(".ev-result", { timeout: 60_000 });
    const evaluations = (await api<{ data: { id: string; steps: number[]; scores: { step: number; passed: number; total: number }[] }[] }>("GET", `/v1/preview/models/${modelId}/evaluations`)).body.data;
    expect(evaluations).toHaveLength(1);
    expect(evaluations[0]?.steps).toEqual([0, 1]);
    // The scores the page shows are the saved ones, recomputed from the outputs the API kept.
    const saved = (await api<{ rows: { expected: string; outputs: { step: number; text: string; passed: boolean }[] }[]; scores: { step: number; passed: number }[] }>("GET", `/v1/preview/evaluations/${evaluations[0]?.id}`)).body;
    for (const score of saved.scores) {
      const passed = saved.rows.filter((row) => row.outputs.find((output) => output.step === score.step)?.text.trim() === row.expected.trim()).length;
      expect(score.passed).toBe(passed);
      expect(await page.textContent(`.ev-score[data-score-step="${score.step}"] .ev-score-count`)).toBe(`${passed} of ${EVAL_LINES.length} passed`);
    }
    await screenshotBoth(page, "new-user-evaluate", () => page.locator(".ev-result").scrollIntoViewIfNeeded());

    // Delete the model: its page's Delete, its name typed into the confirmation, Enter.
    await activate(`a[href="#/models/${modelId}"]`);
    await page.waitForSelector("h1:has-text('first/helper')");
    await activate('button[data-action="delete-model"]');
    await page.waitForSelector("dialog.confirm-dialog[open]");
    await page.keyboard.type("helper");
    await screenshotBoth(page, "new-user-delete");
    await activate("dialog.confirm-dialog button[data-confirm]");
    await page.waitForURL(/#\/$/);
    await page.waitForSelector("[data-empty]");
    expect((await api("GET", `/v1/preview/models/${modelId}`)).status).toBe(404);
    expect((await api("GET", `/v1/preview/evaluations/${evaluations[0]?.id}`)).status).toBe(404);
    expect(errors).toEqual([]);
  }, 300_000);
});
