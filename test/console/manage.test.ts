// Managing models in the console as a new user, in Chromium against a real server with a training
// worker: registering a model with the keyboard only (Tab, typing, Enter) and being told when a
// name is taken, copying the curl, Python and ART snippets with the served name and running each as
// copied, cancelling a queued job, deleting a checkpoint and then the model (each after a
// confirmation), every result read back through the API. The checkpoint table keeps its actions in sight at 1280 and 420 px. Screenshots go to
// test/artifacts/console/manage-*.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest as restAt } from "../support/clients.js";
import { consoleErrors, DESKTOP, launchBrowser, PHONE, screenshotBoth, signedInPage, tabTo } from "../support/console-browser.js";
import { sampledGroup } from "../support/sampled-group.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

interface Model {
  id: string;
  entity: string;
  project: string;
  name: string;
}
interface Job {
  id: string;
  status: string;
  error_message?: string | null;
  step?: number | null;
}

let isolated: IsolatedServer;
let browser: Browser;
let page: Page;
let errors: string[];
let url = "";
let key = "";

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await restAt(method, path, { key, body, base: url });
  if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${response.text}`);
  return response.body as T;
}

/** `count` groups sampled from the model (see sampledGroup), a prompt and seed each. */
async function sampleGroups(model: Model, count: number) {
  const served = `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
  const groups = [];
  for (let g = 0; g < count; g++) groups.push(await sampledGroup({ base: url, key, model: served, prompt: `Count to ${g + 2}.`, seed: g + 1 }));
  return groups;
}

async function finished(jobId: string): Promise<Job> {
  for (;;) {
    const job = await api<Job>("GET", `/v1/preview/training-jobs/${jobId}`);
    if (job.status === "succeeded" || job.status === "failed") return job;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The ART client's environment (it has `openai` too): the snippets run there as copied. */
const CLIENT_PYTHON = fileURLToPath(new URL("../../.cache/clients/art-0.5.23/bin/python", import.meta.url));

/** Runs a copied Python snippet with SRL_API_KEY set, in a scratch directory (ART keeps files in its cwd); its stdout. */
async function runSnippet(code: string, program = CLIENT_PYTHON): Promise<string> {
  if (!existsSync(CLIENT_PYTHON)) throw new Error(`${CLIENT_PYTHON} is missing: run bash scripts/install-client-env.sh art-0.5.23`);
  const scratch = await mkdtemp(join(tmpdir(), "srl-snippet-"));
  try {
    return await new Promise<string>((resolve, reject) => {
      // Offline here: litellm (imported by ART) would fetch a price list, wandb would report errors.
      const env = { PATH: process.env.PATH ?? "", HOME: scratch, SRL_API_KEY: key, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_SILENT: "true", WANDB_ERROR_REPORTING: "false", WANDB_MODE: "disabled" };
      execFile(program, ["-c", code], { cwd: scratch, env, timeout: 180_000 }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)));
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** True when `selector`'s box lies inside the checkpoint table's scroll box (seen without scrolling). */
async function inSight(selector: string): Promise<boolean> {
  const box = await page.locator(".checkpoints-scroll").boundingBox();
  const cell = await page.locator(selector).boundingBox();
  return !!box && !!cell && cell.x >= box.x - 1 && cell.x + cell.width <= box.x + box.width + 1;
}

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "manage", entity: "manage-team" });
  url = isolated.server.url;
  key = isolated.key;
  browser = await launchBrowser();
  page = await signedInPage(browser, url, key);
  // The taken name's 409 is the browser logging the refusal the test provokes; nothing else may show.
  errors = consoleErrors(page, [/status of 409 \(Conflict\) \(http:\/\/[^)]+\/srl\.v1\.Models\/CreateModel\)/]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("managing models in the console", () => {
  let model: Model;

  it("registers a model with the keyboard only, and says when a name is taken", async () => {
    const firstBase = (await api<string[]>("GET", "/v1/preview/base-models"))[0] ?? "";
    await page.goto(`${url}/#/`);
    await page.waitForSelector("[data-empty] pre.snippet");
    const snippet = (await page.textContent("[data-empty] pre.snippet")) ?? "";
    expect(snippet).toContain("$SRL_API_KEY");
    expect(snippet).toContain(`"base_model": "${firstBase}"`);
    await screenshotBoth(page, "manage-empty");

    // Tab to the empty state's "New model", Enter; the form takes focus on its first field.
    await tabTo(page, '[data-empty] button[data-action="new-model"]');
    await page.keyboard.press("Enter");
    await page.waitForSelector("dialog.new-model-dialog[open] input[name=base]");
    expect(await page.evaluate<string>("document.activeElement?.id")).toBe("new-model-project");
    await page.keyboard.type("manage");
    await page.keyboard.press("Tab");
    await page.keyboard.type("agent 1");
    await page.keyboard.press("Enter");
    // A name the API would refuse is caught in the form, saying what is allowed.
    await page.waitForSelector('#new-model-name[aria-invalid="true"]');
    expect(await page.textContent("dialog .form-error[role=alert]")).toContain("letters, digits");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Tab");
    // The base models with their details; the first trainable one is chosen.
    expect(await page.evaluate<string>("document.activeElement?.value")).toBe(firstBase);
    expect(await page.textContent(`dialog [data-base="${firstBase}"]`)).toMatch(/trainable.*tokens of context/);
    await page.keyboard.press("Enter");
    await page.waitForURL(/#\/models\/[0-9a-f-]{36}$/);
    const id = new URL(page.url()).hash.split("/")[2] ?? "";
    model = await api<Model>("GET", `/v1/preview/models/${id}`);
    expect(model).toMatchObject({ project: "manage", name: "agent", entity: "manage-team" });
    await page.waitForSelector("h1:has-text('manage/agent')");

    // The list shows it; the same name again is refused by the API, and the form says what to do.
    await page.goto(`${url}/#/`);
    await page.waitForSelector("a.model-name:has-text('agent')");
    await tabTo(page, '.toolbar button[data-action="new-model"]');
    await page.keyboard.press("Enter");
    await page.waitForSelector("dialog.new-model-dialog[open] input[name=base]");
    await page.keyboard.type("manage");
    await page.keyboard.press("Tab");
    await page.keyboard.type("agent");
    await page.keyboard.press("Enter");
    await page.waitForSelector('#new-model-name[aria-invalid="true"]');
    expect(await page.textContent("#new-model-name-hint")).toContain("choose another name");
    await screenshotBoth(page, "manage-new-model");
    await page.keyboard.press("Escape");
    await page.waitForSelector("dialog.new-model-dialog", { state: "detached" });
    expect((await api<{ data: Model[] }>("GET", "/v1/preview/models")).data).toHaveLength(1);
  }, 60_000);

  it("cancels queued jobs (model page, job page), keeps the checkpoint actions in sight, copies a snippet and deletes a step", async () => {
    const groups = await sampleGroups(model, 2);
    const made = await api<Job>("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups, experimental_config: { learning_rate: 0.001 } });
    // A second job of the same model waits for the first: it is queued while we cancel it.
    const queued = await api<Job>("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups });
    const another = await api<Job>("POST", "/v1/preview/training-jobs", { model_id: model.id, trajectory_groups: groups });
    await page.goto(`${url}/#/models/${model.id}`);
    await page.click(`.jobs-table button[data-cancel-job="${queued.id}"]`);
    await page.waitForSelector("dialog.confirm-dialog[open]");
    expect(await page.textContent("dialog.confirm-dialog")).toContain(queued.id.slice(0, 8));
    await page.click("dialog.confirm-dialog button[data-confirm]");
    await page.waitForSelector(`.jobs-table tr[data-job-id="${queued.id}"] [data-status="failed"]`);
    expect(await page.$(`button[data-cancel-job="${queued.id}"]`)).toBeNull();
    expect(await api<Job>("GET", `/v1/preview/training-jobs/${queued.id}`)).toMatchObject({ status: "failed", error_message: "cancelled" });
    // The job page cancels too; its status and the reason show there.
    await page.goto(`${url}/#/jobs/${another.id}`);
    await page.click('button[data-cancel-job]:has-text("Cancel job")');
    await page.click("dialog.confirm-dialog button[data-confirm]");
    await page.waitForSelector('.job-status [data-status="failed"]');
    await page.waitForSelector('.job-error:has-text("cancelled")');
    expect(await page.$("button[data-cancel-job]")).toBeNull();
    expect(await api<Job>("GET", `/v1/preview/training-jobs/${another.id}`)).toMatchObject({ status: "failed", error_message: "cancelled" });
    await page.goto(`${url}/#/models/${model.id}`);

    expect((await finished(made.id)).status).toBe("succeeded");
    await page.waitForSelector('.checkpoints-table tr[data-step="1"]');
    const download = `button[data-download="manage/agent:step1"]`;
    for (const size of [DESKTOP, PHONE]) {
      await page.setViewportSize(size);
      for (const action of ['a[data-try="1"]', download, 'button[data-delete-step="1"]']) expect(await inSight(action), `${action} at ${size.width} px`).toBe(true);
    }
    // At 420 px the metrics scroll inside their box (the page itself does not), and a hint says how many are out of sight.
    expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(PHONE.width);
    await page.waitForSelector(".scroll-hint:not([hidden])");
    expect(await page.textContent(".scroll-hint")).toMatch(/Scroll sideways for \d+ more metrics/);
    await page.setViewportSize(DESKTOP);

    // "Use this model": the latest step's served name, the key from the environment.
    await page.waitForSelector('[data-use-step]:has-text("latest step (1)")');
    await page.click('.snippets [role=tab][data-client="python"]');
    await page.click(".snippets button[data-copy-snippet]");
    const copied = await page.evaluate<string>("navigator.clipboard.readText()");
    expect(copied).toContain(`model="wandb-artifact:///manage-team/manage/agent:step1"`);
    expect(copied).toContain('os.environ["SRL_API_KEY"]');
    expect(copied).toContain(`base_url="${url}/v1"`);
    // The copied code runs as it is, with the key from the environment: it exits 0 after printing
    // the reply (which a tiny model sampling at temperature 1 may leave empty: only its line end).
    expect(await runSnippet(copied)).toMatch(/\n$/);
    await page.click('.snippets [role=tab][data-client="art"]');
    await page.click(".snippets button[data-copy-snippet]");
    const art = await page.evaluate<string>("navigator.clipboard.readText()");
    expect(art).toContain('api_key=os.environ["SRL_API_KEY"]');
    expect(await runSnippet(art)).toMatch(/\n$/);
    await page.click('.snippets [role=tab][data-client="curl"]');
    await page.click(".snippets button[data-copy-snippet]");
    const curl = await page.evaluate<string>("navigator.clipboard.readText()");
    expect(JSON.parse(await runSnippet(curl, "bash"))).toMatchObject({ object: "chat.completion", model: "wandb-artifact:///manage-team/manage/agent:step1" });
    await screenshotBoth(page, "manage-model", () => page.locator(".checkpoints-section").evaluate((section) => section.scrollIntoView()));

    await page.click('button[data-delete-step="1"]');
    await page.waitForSelector("dialog.confirm-dialog[open]");
    expect(await page.textContent("dialog.confirm-dialog")).toContain("manage/agent step 1");
    await page.click("dialog.confirm-dialog button[data-confirm]");
    await page.waitForSelector('.checkpoints-table tr[data-step="1"]', { state: "detached" });
    const left = await api<{ data: { step: number }[] }>("GET", `/v1/preview/models/${model.id}/checkpoints`);
    expect(left.data.map((checkpoint) => checkpoint.step)).toEqual([0]);
  }, 180_000);

  it("deletes the model once its name is typed, and goes back to the list", async () => {
    await page.goto(`${url}/#/models/${model.id}`);
    await page.click('button[data-action="delete-model"]');
    await page.waitForSelector("dialog.confirm-dialog[open]");
    expect(await page.textContent("dialog.confirm-dialog h2")).toBe("Delete manage/agent?");
    const confirm = "dialog.confirm-dialog button[data-confirm]";
    expect(await page.isDisabled(confirm)).toBe(true);
    await page.keyboard.type("agen");
    expect(await page.isDisabled(confirm)).toBe(true);
    await page.keyboard.type("t");
    expect(await page.isEnabled(confirm)).toBe(true);
    await screenshotBoth(page, "manage-delete");
    await page.click(confirm);
    await page.waitForURL(/#\/$/);
    await page.waitForSelector("[data-empty]");
    expect((await restAt("GET", `/v1/preview/models/${model.id}`, { key, base: url })).status).toBe(404);
    expect(errors).toEqual([]);
  }, 60_000);
});
