// The console's playground in a real browser against a real server with a training worker: the
// model picker lists base models and a trained model's steps, sampling settings reach the API
// (the page's greedy and seeded replies equal the REST API's), usage and finish reason are the
// API's, Stop keeps the text so far, two checkpoints stream side by side, and a bad model name
// fails in its own column. Screenshots: test/artifacts/console/playground*.png.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { rest as restAt } from "../support/clients.js";
import { launchBrowser, screenshotBoth, signedInPage } from "../support/console-browser.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const ENTITY = "play-team";
const STEP0 = `wandb-artifact:///${ENTITY}/web/watched:step0`;
const STEP1 = `wandb-artifact:///${ENTITY}/web/watched:step1`;
const PROMPT = "Hello! Who are you?"; // the page's default user prompt

let isolated: IsolatedServer;
let browser: Browser;
let page: Page;
let url = "";

const rest = async (method: string, path: string, body?: unknown) => {
  const response = await restAt(method, path, { key: isolated.key, body, base: isolated.server.url });
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${response.text}`);
  return response.body;
};

interface ApiReply {
  text: string;
  finish: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** The same request the page makes, through REST (no system prompt, top_p 1). */
async function apiReply(model: string, sampling: { temperature: number; max_tokens: number; seed?: number }): Promise<ApiReply> {
  const body = (await rest("POST", "/v1/chat/completions", { model, messages: [{ role: "user", content: PROMPT }], top_p: 1, ...sampling })) as {
    choices: { message: { content: string | null }; finish_reason: string }[];
    usage: ApiReply["usage"];
  };
  const choice = body.choices[0];
  if (!choice) throw new Error("no choice");
  return { text: choice.message.content ?? "", finish: choice.finish_reason, usage: body.usage };
}

/** Trains one RL step on the model, so it has a step 1. */
async function trainOneStep(modelId: string): Promise<void> {
  const messages = [{ role: "user", content: "hi" }];
  const sampled = (await rest("POST", "/v1/chat/completions", { model: `wandb-artifact:///${ENTITY}/web/watched`, messages, n: 4, temperature: 1, seed: 1, max_tokens: 8, logprobs: true, return_tokens_as_token_ids: true })) as { choices: unknown[] };
  const groups = [{ trajectories: sampled.choices.map((choice, i) => ({ messages_and_choices: [...messages, choice], reward: i / 4 })) }];
  const job = (await rest("POST", "/v1/preview/training-jobs", { model_id: modelId, trajectory_groups: groups, experimental_config: { learning_rate: 0.001 } })) as { id: string };
  for (;;) {
    const state = (await rest("GET", `/v1/preview/training-jobs/${job.id}`)) as { status: string; error_message?: string };
    if (state.status === "succeeded") return;
    if (state.status === "failed") throw new Error(`training failed: ${state.error_message}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Fills a sampling field (clearing it first). */
async function setField(name: string, value: string): Promise<void> {
  await page.fill(`.pg-sampling [name=${name}]`, value);
}

/** Sends (with the button) and waits until every shown column has ended its new run. */
async function sendAndWait(columns: ("a" | "b")[] = ["a"], send: () => Promise<void> = () => page.click("button.pg-send")): Promise<void> {
  const runs = await Promise.all(columns.map((column) => page.getAttribute(`[data-column=${column}]`, "data-run").then((run) => Number(run ?? "0"))));
  await send();
  for (const [index, column] of columns.entries()) {
    await page.waitForSelector(`[data-column=${column}][data-run="${(runs[index] ?? 0) + 1}"]:is([data-state=finished], [data-state=stopped], [data-state=failed])`);
  }
}

async function column(name: "a" | "b") {
  const selector = `[data-column=${name}]`;
  const count = async (what: string) => page.getAttribute(`${selector} [data-testid=usage]`, `data-${what}-tokens`);
  const [prompt, completion, total] = await Promise.all([count("prompt"), count("completion"), count("total")]);
  return {
    state: await page.getAttribute(selector, "data-state"),
    text: (await page.textContent(`${selector} [data-testid=output]`)) ?? "",
    finish: await page.getAttribute(`${selector} [data-testid=finish]`, "data-finish"),
    usage: prompt === null ? null : { prompt_tokens: Number(prompt), completion_tokens: Number(completion), total_tokens: Number(total) },
    error: (await page.isHidden(`${selector} [data-testid=column-error]`)) ? null : await page.textContent(`${selector} [data-testid=column-error]`),
  };
}

/** Waits until the picker lists the model's steps (options are never "visible" to playwright). */
async function catalogLoaded(select = "model"): Promise<void> {
  await page.waitForSelector(`select[name=${select}] option[value="${STEP0}"]`, { state: "attached" });
}

/** value → text of a select's options (the test's tsconfig has no DOM types: the script is a string). */
async function optionTexts(select: string): Promise<Record<string, string>> {
  return (await page.evaluate(`Object.fromEntries([...document.querySelectorAll("select[name=${select}] option")].map((o) => [o.value, o.textContent]))`)) as Record<string, string>;
}

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "playground", entity: ENTITY });
  url = isolated.server.url;
  const model = (await rest("POST", "/v1/preview/models", { project: "web", name: "watched", base_model: "tiny-chat" })) as { id: string };
  [browser] = await Promise.all([launchBrowser(), trainOneStep(model.id)]);
  page = await signedInPage(browser, url, isolated.key);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await isolated?.stop();
});

describe("console playground", () => {
  it("lists the base models and every step of the model, and preselects the linked one", async () => {
    await page.goto(`${url}/#/playground?model=${encodeURIComponent(STEP1)}`);
    await catalogLoaded();
    const options = await optionTexts("model");
    expect(options["tiny-chat"]).toBe("tiny-chat (base)");
    expect(options[STEP1]).toBe("web/watched · latest (step 1)");
    expect(options[STEP0]).toBe("web/watched · step 0 (base weights)");
    expect(Object.values(options)).toContain("Custom model name…");
    expect(await page.inputValue("select[name=model]")).toBe(STEP1);

    // A linked name no list holds is still chosen (and sent as it is).
    await page.goto(`${url}/#/playground?model=${encodeURIComponent("web/watched:step1")}`);
    await catalogLoaded();
    expect(await page.inputValue("select[name=model]")).toBe("web/watched:step1");
  });

  it("sends max tokens and the seed: greedy and seeded replies, finish reason and usage equal the API's", async () => {
    await page.goto(`${url}/#/playground?model=${encodeURIComponent(STEP1)}`);
    await catalogLoaded();
    await setField("temperature", "0");
    await setField("max_tokens", "6");
    await sendAndWait();
    const greedy = await column("a");
    const expected = await apiReply(STEP1, { temperature: 0, max_tokens: 6 });
    expect(greedy.text).toBe(expected.text);
    expect(greedy.finish).toBe("length");
    expect(expected.finish).toBe("length");
    expect(greedy.usage).toEqual({ prompt_tokens: expected.usage.prompt_tokens, completion_tokens: 6, total_tokens: expected.usage.total_tokens });

    // Sampled with a seed, sent with Ctrl+Enter.
    await setField("temperature", "0.9");
    await setField("max_tokens", "96");
    await setField("seed", "7");
    await sendAndWait(["a"], () => page.press("textarea[name=prompt]", "Control+Enter"));
    const seeded = await column("a");
    const seededApi = await apiReply(STEP1, { temperature: 0.9, max_tokens: 96, seed: 7 });
    expect(seeded.text).toBe(seededApi.text);
    expect(seeded.finish).toBe(seededApi.finish);
    expect(seeded.usage).toEqual({ prompt_tokens: seededApi.usage.prompt_tokens, completion_tokens: seededApi.usage.completion_tokens, total_tokens: seededApi.usage.total_tokens });
    expect(await page.textContent("[data-column=a] [data-testid=first-token]")).toMatch(/\d (ms|s)$/);
    await screenshotBoth(page, "playground");
  });

  it("stops a long reply, keeping the text so far", async () => {
    await setField("temperature", "0");
    await setField("max_tokens", "2000");
    await setField("seed", "");
    const runs = Number((await page.getAttribute("[data-column=a]", "data-run")) ?? "0");
    await page.click("button.pg-send");
    await page.waitForFunction("(document.querySelector('[data-column=a] [data-testid=output]')?.textContent ?? '').length > 0");
    await page.click("button.pg-stop");
    await page.waitForSelector(`[data-column=a][data-run="${runs + 1}"]:not([data-state=streaming])`);
    const stopped = await column("a");
    expect(stopped.finish, `ended by itself first, after ${stopped.usage?.completion_tokens} tokens`).toBe("stopped");
    expect(stopped.text.length).toBeGreaterThan(0);
    expect(stopped.usage?.completion_tokens).toBeLessThan(2000);
    // Nothing more arrives after the stop.
    await page.waitForTimeout(500);
    expect((await column("a")).text).toBe(stopped.text);
    expect(await page.isEnabled("button.pg-send")).toBe(true);
    expect(await page.isDisabled("button.pg-stop")).toBe(true);
  });

  it("streams two checkpoints side by side; one Stop stops both", async () => {
    await page.goto(`${url}/#/playground?model=${encodeURIComponent(STEP1)}`);
    await catalogLoaded();
    await page.check("input[name=compare]");
    // The second picker starts at step 0 of the same model.
    expect(await page.inputValue("select[name=compare-model]")).toBe(STEP0);
    await setField("temperature", "0");
    await setField("max_tokens", "24");
    await sendAndWait(["a", "b"]);
    const [latest, base] = [await column("a"), await column("b")];
    const [latestApi, baseApi] = [await apiReply(STEP1, { temperature: 0, max_tokens: 24 }), await apiReply(STEP0, { temperature: 0, max_tokens: 24 })];
    expect(latest.text).toBe(latestApi.text);
    expect(base.text).toBe(baseApi.text);
    expect(latest.text.length).toBeGreaterThan(0);
    expect(base.text.length).toBeGreaterThan(0);
    expect([latest.finish, base.finish]).toEqual([latestApi.finish, baseApi.finish]);
    expect(await page.textContent("[data-column=a] .pg-column-title")).toBe("web/watched · latest (step 1)");
    expect(await page.textContent("[data-column=b] .pg-column-title")).toBe("web/watched · step 0 (base weights)");
    // The route keeps both choices (a reload or a shared link shows the same comparison).
    expect(decodeURIComponent(new URL(page.url()).hash)).toContain(`compare=${STEP0}`);
    await screenshotBoth(page, "playground-side-by-side");

    // Both stream at once: one Stop ends both.
    await setField("max_tokens", "2000");
    const runs = await Promise.all(["a", "b"].map(async (name) => Number((await page.getAttribute(`[data-column=${name}]`, "data-run")) ?? "0")));
    await page.click("button.pg-send");
    await page.waitForFunction("[...document.querySelectorAll('.pg-column [data-testid=output]')].every((output) => output.textContent.length > 0)");
    await page.click("button.pg-stop");
    for (const [index, name] of (["a", "b"] as const).entries()) {
      await page.waitForSelector(`[data-column=${name}][data-run="${(runs[index] ?? 0) + 1}"]:not([data-state=streaming])`);
      expect((await column(name)).finish).toBe("stopped");
    }
  });

  it("shows a bad model name's error in its own column", async () => {
    await page.goto(`${url}/#/playground?model=tiny-chat&compare=tiny-chat`);
    await catalogLoaded("compare-model");
    await page.selectOption("select[name=compare-model]", { label: "Custom model name…" });
    await page.fill("input[name=compare-model-custom]", "no-such-model");
    await setField("max_tokens", "4");
    await sendAndWait(["a", "b"]);
    const [good, bad] = [await column("a"), await column("b")];
    expect(good.state).toBe("finished");
    expect(good.error).toBeNull();
    expect(bad.state).toBe("failed");
    expect(bad.finish).toBe("error");
    expect(bad.error).toContain("The model `no-such-model` does not exist.");
    expect(await page.isHidden("#error")).toBe(true);

    // Compare turned off: the hidden picker's empty custom name does not block sending.
    await page.fill("input[name=compare-model-custom]", "");
    await page.uncheck("input[name=compare]");
    await sendAndWait(["a"]);
    expect((await column("a")).state).toBe("finished");
  });

  it("offers the base models and says how to register a model when the key has none", async () => {
    const key = (await new ApiKeys(isolated.db.db).create("empty-team")).key;
    const empty = await signedInPage(browser, url, key);
    await empty.goto(`${url}/#/playground`);
    await empty.waitForSelector(".pg-note [data-empty]");
    expect(await empty.textContent(".pg-note")).toContain("/v1/preview/models");
    expect(await empty.inputValue("select[name=model]")).toBe("tiny-chat");
    await empty.context().close();
  });
});
