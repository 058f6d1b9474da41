// The train view in Chromium against a server of its own (tiny-chat, real trainer): bad SFT data is
// refused line by line before anything is uploaded; good data uploads with a progress bar, an SFT job
// starts from the form and is followed to its end (the model gains step 1); then an RL job starts
// from a logged batch of sampled, scored groups (a reward-only batch is explained as untrainable).
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { consoleErrors, launchBrowser, screenshotBoth, signedInPage } from "../support/console-browser.js";
import { sampledGroup } from "../support/sampled-group.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";
import { checkFile, JsonlChecker, MAX_LISTED_ERRORS } from "../../console/src/train/jsonl-check.js";

let isolated: IsolatedServer;
let browser: Browser;
let page: Page;
let errors: string[] = [];
let url = "";
let key = "";
const rest = (method: string, path: string, body?: unknown) => restAt(method, path, { key, body, base: url });

const chat = (question: string, answer: string) => JSON.stringify({ messages: [{ role: "user", content: question }, { role: "assistant", content: answer }] });
const jsonl = (lines: string[]) => ({ name: "train.jsonl", mimeType: "application/jsonl", buffer: Buffer.from(lines.join("\n") + "\n") });

async function latestStep(modelId: string): Promise<number> {
  const page = (await rest("GET", `/v1/preview/models/${modelId}/checkpoints?order=desc&limit=1`)).body as { data: { step: number }[] };
  return page.data[0]?.step ?? -1;
}

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "train-view", entity: "train-team" });
  url = isolated.server.url;
  key = isolated.key;
  browser = await launchBrowser();
  page = await signedInPage(browser, url, key);
  // The one refusal the test provokes (a dataset name that does not exist) is logged by the browser.
  errors = consoleErrors(page, [/status of 400 \(Bad Request\) \(.*\/srl\.v1\.Training\/CreateSftTrainingJob\)/]);
});
afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("train view", () => {
  let modelId = "";

  it("checks SFT data line by line, uploads it with progress and follows the SFT job to step 1", async () => {
    const model = (await rest("POST", "/v1/preview/models", { project: "web", name: "learner", base_model: "tiny-chat" })).body as { id: string };
    modelId = model.id;
    await page.goto(`${url}/#/models/${modelId}`);
    await page.getByRole("link", { name: "Train", exact: true }).click();
    await page.waitForSelector("h1:has-text('Train web/learner')");

    // Bad data: each bad line named, nothing can be uploaded.
    await page.getByLabel("Choose a .jsonl file").setInputFiles(
      jsonl([chat("a", "b"), "{not json", JSON.stringify({ messages: "hi" }), JSON.stringify({ messages: [{ role: "user", content: "no reply" }] }), JSON.stringify({ messages: [{ content: "x" }, { role: "assistant", content: "y" }] })]),
    );
    const lineErrors = page.locator(".line-errors li");
    await expect.poll(() => lineErrors.count()).toBe(4);
    expect(await lineErrors.nth(0).textContent()).toMatch(/^line 2 is not JSON: /);
    expect(await lineErrors.nth(1).textContent()).toBe("line 3: `messages` must be a list");
    expect(await lineErrors.nth(2).textContent()).toContain('line 4: the last message must be the assistant\'s (it is "user")');
    expect(await lineErrors.nth(3).textContent()).toBe('line 5: messages[0] needs a string "role"');
    expect(await page.textContent(".check-summary")).toContain("train.jsonl (226 B): 5 lines, 1 conversation");
    expect(await page.textContent(".check-result")).toContain("Fix these lines and choose the file again");
    const upload = page.getByRole("button", { name: "Upload", exact: true });
    expect(await upload.isDisabled()).toBe(true);
    await screenshotBoth(page, "train-errors", () => page.locator(".check-result").scrollIntoViewIfNeeded());

    // Pasted text is checked the same way.
    await page.getByLabel("Or paste JSONL").fill(`${chat("x", "y")}\n[1, 2]`);
    await expect.poll(() => page.textContent(".line-errors")).toContain("line 2 must be a JSON object");
    expect(await upload.isDisabled()).toBe(true);
    await page.getByLabel("Or paste JSONL").fill("");

    // Good data: summary, upload to 100 %, and the artifact filled in as the job's data.
    const lines = [chat("What is the capital of France?", "Paris"), chat("2+2?", "4"), chat("Colour of the sky?", "Blue"), chat("Say hi", "hi")];
    // Dropped on the drop zone this time (a real DataTransfer carrying a File).
    // (Run in the page; written as text because the test's own types have no DOM.)
    const dropped = await page.evaluateHandle(`(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([${JSON.stringify(lines.join("\n") + "\n")}], "train.jsonl", { type: "application/jsonl" }));
      return transfer;
    })()`);
    await page.dispatchEvent(".drop-zone", "drop", { dataTransfer: dropped });
    await expect.poll(() => page.textContent(".check-summary")).toBe("train.jsonl (382 B): 4 lines, 4 conversations, about 70 characters of messages. Ready to upload.");
    expect(await upload.isEnabled()).toBe(true);
    await upload.click();
    await page.waitForSelector(".uploaded:not([hidden]):has-text('learner-sft:v0')");
    expect(await page.textContent("[data-testid=upload-percent]")).toBe("100%");
    expect(await upload.isDisabled()).toBe(true); // the same data again would only add a version
    expect(await page.locator("#train-upload-progress").evaluate((bar) => (bar as unknown as { value: number }).value)).toBe(1);
    expect(await page.getByLabel("Training data").inputValue()).toBe("wandb-artifact:///train-team/web/learner-sft:v0");
    await screenshotBoth(page, "train-uploaded", () => page.locator(".uploaded").scrollIntoViewIfNeeded());

    // A dataset name that resolves to nothing: the server's refusal, with what to do.
    const data = page.getByLabel("Training data");
    await data.fill("nothing-here:v3");
    await page.getByRole("button", { name: "Start SFT job" }).click();
    await expect.poll(() => page.textContent(".train-form .form-message")).toContain("wandb-artifact:///train-team/web/nothing-here:v3 does not resolve to an uploaded artifact");
    expect(await page.textContent(".train-form .form-message")).toContain("upload it above");
    await data.fill("learner-sft:v0");

    // The job starts from the keyboard (Enter in a field submits the form) and is followed to its end.
    await page.getByLabel("Learning rate").first().fill("1e-3");
    await page.getByLabel("Learning rate").first().press("Enter");
    await page.waitForURL(/#\/jobs\//);
    await page.waitForSelector('.job-status [data-status="succeeded"]', { timeout: 120_000 });
    expect(await page.textContent("h1")).toContain("SFT training job");
    expect(await latestStep(modelId)).toBe(1);
    expect(errors).toEqual([]);
  }, 180_000);

  it("starts an RL job from a logged batch and explains a batch that cannot train", async () => {
    // A reward-only batch (nothing to train), then a batch of the model's own sampled replies.
    await rest("POST", `/v1/preview/models/${modelId}/log`, { split: "val", trajectory_groups: [{ trajectories: [{ reward: 0.2 }, { reward: 0.4 }] }] });
    const messages = [{ role: "user", content: "hi" }];
    const groups = [await sampledGroup({ base: url, key, model: "wandb-artifact:///train-team/web/learner", prompt: "hi", seed: 1 })];
    expect((await rest("POST", `/v1/preview/models/${modelId}/log`, { split: "train", trajectory_groups: groups })).status).toBe(200);

    await page.goto(`${url}/#/models/${modelId}/train`);
    await page.getByLabel("val at step 1").check();
    await expect.poll(() => page.textContent(".batch-summary")).toContain("This batch cannot train");
    const start = page.getByRole("button", { name: "Start RL job" });
    expect(await start.isDisabled()).toBe(true);
    const trainRow = page.locator("tr", { has: page.getByLabel("train at step 1") });
    await expect.poll(() => trainRow.locator("td").nth(2).textContent()).toBe("0.375");

    await page.getByLabel("train at step 1").check();
    await expect.poll(() => page.textContent(".batch-summary")).toContain("1 group, 4 trajectories, mean reward 0.375; 4 with sampled logprobs.");
    await page.locator("#rl-learning-rate").fill("0.001");
    await screenshotBoth(page, "train-rl", () => page.locator(".batch-summary").scrollIntoViewIfNeeded());
    await start.click();
    await page.waitForURL(/#\/jobs\//);
    await page.waitForSelector('.job-status [data-status="succeeded"]', { timeout: 120_000 });
    expect(await page.textContent("h1")).toContain("RL training job");
    expect(await latestStep(modelId)).toBe(2);

    // Replies written as plain assistant messages (no sampled Choice, no logprobs): the page warns,
    // and when started anyway the trainer's refusal is shown on the job page.
    const plain = (answer: string, reward: number) => ({ messages_and_choices: [...messages, { role: "assistant", content: answer }], reward });
    await rest("POST", `/v1/preview/models/${modelId}/log`, { split: "plain", trajectory_groups: [{ trajectories: [plain("hello", 1), plain("bye", 0)] }] });
    await page.goto(`${url}/#/models/${modelId}/train`);
    await page.getByLabel("plain at step 2").check();
    await expect.poll(() => page.textContent(".batch-summary")).toContain("No trajectory of this batch carries sampled logprobs");
    expect(await start.isDisabled()).toBe(true);
    await page.getByLabel("Also train replies that carry no logprobs").check();
    expect(await start.isEnabled()).toBe(true);
    await start.click();
    await page.waitForURL(/#\/jobs\//);
    await page.waitForSelector('.job-status [data-status="failed"], .job-status [data-status="succeeded"]', { timeout: 120_000 });
    expect(await page.textContent(".job-status")).toBe("succeeded");
    expect(await page.textContent("[data-testid=steps]")).toMatch(/^([1-9]\d*) of \1 gradient steps$/);
    expect(await latestStep(modelId)).toBe(3);
    expect(errors).toEqual([]);
  }, 180_000);
});

describe("SFT data check (the page's own reader, run in Node)", () => {
  it("gives the same report whatever the chunking, and lists only the first errors", async () => {
    const good = chat("q", "é");
    const text = Array.from({ length: 30 }, (_, i) => (i % 2 ? "oops" : good)).join("\r\n");
    const byCharacter = new JsonlChecker();
    for (const character of text) byCharacter.push(character);
    const whole = new JsonlChecker();
    whole.push(text);
    const expected = { lines: 30, conversations: 15, characters: 30, errorCount: 15 };
    expect(byCharacter.finish()).toMatchObject(expected);
    expect(whole.finish()).toMatchObject(expected);

    // A file of many chunks (multi-byte characters across chunk edges), read as a stream.
    const many = Array.from({ length: 50_000 }, (_, i) => (i % 1000 === 999 ? "{" : good)).join("\n");
    const report = await checkFile(new Blob([many]), new AbortController().signal, () => {});
    expect(report).toMatchObject({ lines: 50_000, conversations: 49_950, characters: 49_950 * 2, errorCount: 50 });
    expect(report.errors).toHaveLength(MAX_LISTED_ERRORS);
    expect(report.errors[0]).toMatch(/^line 1000 is not JSON: /);
    expect(new JsonlChecker().finish().errors).toEqual([expect.stringContaining("the data has no conversations")]);
  });
});
