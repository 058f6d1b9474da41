// The trajectory browser in Chromium against the suite's server: logged batches and a training
// job's input by split and step, groups with their reward spread, sorting and filtering by reward
// and text, a trajectory drawn as a chat (tool calls, sampled choices), state kept in the address,
// client text never run as HTML, and the empty state's next step.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrl, rest } from "../support/clients.js";
import { launchBrowser, screenshotBoth, signedInPage } from "../support/console-browser.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let browser: Browser;
let page: Page;
let key = "";
let modelId = "";
let emptyModelId = "";
let jobId = "";

const user = (text: string) => ({ role: "user", content: text });
const choice = (text: string, finish = "stop") => ({
  index: 0,
  finish_reason: finish,
  message: { role: "assistant", content: text },
  logprobs: { content: [...text].map((c) => ({ token: c, logprob: -0.5, bytes: [c.charCodeAt(0)], top_logprobs: [] })) },
});
const weatherCall = {
  index: 0,
  finish_reason: "tool_calls",
  message: { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
};
const tools = [{ type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } } } } }];

// Four groups: rewards spread differently (group 3 has none: no learning signal), one exception.
const valGroups = [
  {
    trajectories: [
      { messages_and_choices: [{ role: "system", content: "Answer briefly." }, user("What is 2+2?"), choice("4")], reward: 1, metrics: { correct: true, tokens: 1 } },
      { messages_and_choices: [{ role: "system", content: "Answer briefly." }, user("What is 2+2?"), choice("5")], reward: 0, metrics: { correct: false, tokens: 1 } },
    ],
  },
  {
    trajectories: [
      { messages_and_choices: [user("Weather in Paris?"), weatherCall, { role: "tool", tool_call_id: "call_1", content: "sunny, 21C" }, choice("It is sunny and 21C.")], tools, reward: 0.9, metadata: { city: "Paris" }, logs: ["called get_weather"] },
      { messages_and_choices: [user("Weather in Paris?"), choice("I do not know.")], tools, reward: 0.2 },
    ],
    exceptions: [{ type: "TimeoutError", message: "rollout 3 timed out", traceback: "" }],
  },
  {
    trajectories: [
      { messages_and_choices: [user("Say hi"), choice("hi")], reward: 0.5 },
      { messages_and_choices: [user("Say hi"), choice("hello")], reward: 0.5 },
    ],
  },
  {
    trajectories: [
      { messages_and_choices: [user('<img src=x onerror="window.__pwned=1"> is this text?'), choice("<b>yes</b>", "length")], reward: -0.5 },
      { messages_and_choices: [user('<img src=x onerror="window.__pwned=1"> is this text?'), choice("no")], reward: 0.1 },
    ],
  },
];
const jobGroups = [{ trajectories: [{ messages_and_choices: [user("Job prompt"), choice("job answer")], reward: 1 }, { messages_and_choices: [user("Job prompt"), choice("other")], reward: 0 }] }];

beforeAll(async () => {
  key = await createKey(uniqueEntity("consoletraj"));
  const create = async (name: string) => ((await rest("POST", "/v1/preview/models", { key, body: { project: "browse", name, base_model: "tiny-chat" } })).body as { id: string }).id;
  modelId = await create("agent");
  emptyModelId = await create("fresh");
  expect((await rest("POST", `/v1/preview/models/${modelId}/log`, { key, body: { split: "val", trajectory_groups: valGroups } })).status).toBe(200);
  expect((await rest("POST", `/v1/preview/models/${modelId}/log`, { key, body: { split: "train", trajectory_groups: [valGroups[0]] } })).status).toBe(200);
  // The suite's server runs no training worker: the job stays queued, its input is still stored.
  jobId = ((await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: modelId, trajectory_groups: jobGroups } })).body as { id: string }).id;
  browser = await launchBrowser();
  page = await signedInPage(browser, baseUrl(), key);
});
afterAll(async () => {
  await browser?.close();
});

const groupOrder = () => page.locator(".group-card").evaluateAll((cards) => cards.map((c) => Number(c.getAttribute("data-group"))));
const rewards = () => page.locator(".trajectory-row").evaluateAll((rows) => rows.map((r) => Number(r.querySelector(".reward-pill")?.getAttribute("data-reward"))));

describe("trajectory browser", () => {
  it("lists the batches newest first, the training job's input among them", async () => {
    await page.goto(`${baseUrl()}/#/models/${modelId}/trajectories`);
    await page.waitForSelector(".group-card");
    const options = await page.locator("select[name=batch] option").allTextContents();
    expect(options).toHaveLength(3);
    expect(options[0]).toContain(`trained by job ${jobId.slice(0, 8)}`);
    expect(options[1]).toMatch(/^train · step 0 · logged · 1 group/);
    expect(options[2]).toMatch(/^val · step 0 · logged · 4 groups/);
    expect(await page.textContent(".batch-facts")).toContain("trained on, from step 0");
    expect(await page.getAttribute(`.batch-facts a[href="#/jobs/${jobId}"]`, "href")).toBeTruthy();
    expect(await page.textContent("[data-testid=summary]")).toContain("1 group, 2 trajectories");
    // The split chips narrow the list.
    await page.click("button[data-split=val]");
    expect(await page.locator("select[name=batch] option").count()).toBe(1);
    await page.waitForFunction("document.querySelector('[data-testid=summary]')?.textContent?.startsWith('4 groups, 8 trajectories')");
  });

  it("shows each group's spread and sorts groups and trajectories by reward", async () => {
    expect(await page.textContent("[data-testid=summary]")).toContain("1 exception");
    // Groups by mean reward, high first: 0.55 (group 2), 0.5 (1 and 3), -0.2 (4).
    expect(await groupOrder()).toEqual([1, 0, 2, 3]);
    const flat = page.locator('.group-card[data-group="2"]');
    expect(await flat.textContent()).toContain("std 0");
    expect(await flat.locator(".spread-dot").count()).toBe(2);
    expect(await page.locator('.group-card[data-group="1"]').textContent()).toContain("TimeoutError: rollout 3 timed out");
    await page.selectOption("select[name=sort]", "reward-asc");
    expect(await groupOrder()).toEqual([3, 0, 2, 1]);
    await page.selectOption("select[name=sort]", "spread-desc");
    expect((await groupOrder())[0]).toBe(0); // rewards 1 and 0: the widest spread
    await screenshotBoth(page, "trajectories");
    await page.selectOption("select[name=mode]", "trajectories");
    await page.selectOption("select[name=sort]", "reward-desc");
    expect(await rewards()).toEqual([1, 0.9, 0.5, 0.5, 0.2, 0.1, 0, -0.5]);
  });

  it("filters by reward and text, and keeps the choices in the address", async () => {
    await page.fill("input[name=min]", "0.2");
    expect(await rewards()).toEqual([1, 0.9, 0.5, 0.5, 0.2]);
    expect(await page.textContent("[data-testid=summary]")).toContain("5 match the filters");
    await page.fill("input[name=max]", "0.95");
    await page.fill("input[name=q]", "paris");
    expect(await rewards()).toEqual([0.9, 0.2]);
    expect(page.url()).toContain("q=paris");
    await page.reload();
    await page.waitForSelector(".trajectory-row");
    expect(await rewards()).toEqual([0.9, 0.2]);
    expect(await page.inputValue("input[name=min]")).toBe("0.2");
    await page.fill("input[name=q]", "no such words");
    await page.waitForSelector("[data-empty]");
    expect(await page.textContent(".results")).toContain("No trajectory matches these filters.");
  });

  it("draws a trajectory as a chat: system, user, tool call with its arguments, tool result, the sampled choice", async () => {
    await page.fill("input[name=q]", "");
    await page.fill("input[name=min]", "0.9");
    await page.fill("input[name=max]", "");
    await page.click(".trajectory-row summary >> nth=1"); // 0.9: the tool-using one
    const card = page.locator(".trajectory-row[open] article.trajectory");
    await card.waitFor();
    expect(await card.locator(".bubble").evaluateAll((b) => b.map((x) => x.getAttribute("data-role")))).toEqual(["user", "choice", "tool", "choice"]);
    expect(await card.locator("[data-tool-call=get_weather]").textContent()).toContain('get_weather({"city":"Paris"})');
    expect(await card.locator(".bubble.sampled").first().textContent()).toContain("finish: tool_calls");
    expect(await card.locator(".bubble.sampled").last().textContent()).toContain("It is sunny and 21C.");
    expect(await card.textContent()).toContain("Tools offered: get_weather");
    expect(await card.textContent()).toContain("Logs (1)");
    await screenshotBoth(page, "trajectories-chat");
  });

  it("shows client text as text, never as HTML", async () => {
    await page.fill("input[name=min]", "");
    await page.selectOption("select[name=sort]", "reward-asc");
    await page.click(".trajectory-row summary >> nth=0");
    const card = page.locator(".trajectory-row[open] article.trajectory");
    await card.waitFor();
    expect(await card.textContent()).toContain('<img src=x onerror="window.__pwned=1"> is this text?');
    expect(await card.textContent()).toContain("<b>yes</b>");
    expect(await card.locator("img, b").count()).toBe(0);
    expect(await page.evaluate("window.__pwned")).toBeUndefined();
  });

  it("says how to log trajectories when a model has none", async () => {
    await page.goto(`${baseUrl()}/#/models/${emptyModelId}/trajectories`);
    await page.waitForSelector("[data-empty]");
    const text = await page.textContent("[data-empty]");
    expect(text).toContain("No trajectories stored yet");
    expect(text).toContain(`/v1/preview/models/${emptyModelId}/log`);
  });
}, 120_000);
