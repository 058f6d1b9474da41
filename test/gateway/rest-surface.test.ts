// The REST surface beyond single operations: routing answers, content types, headers clients send.
import { beforeAll, describe, expect, it } from "vitest";
import { baseUrl, rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

let key = "";
beforeAll(async () => {
  key = await createKey(uniqueEntity("surface"));
});

describe("REST routing", () => {
  it("answers unknown paths with a JSON 404 and wrong methods with 405", async () => {
    expect(await rest("GET", "/v1/nothing-here")).toMatchObject({ status: 404, body: { detail: "Not Found" } });
    const wrongVerb = await rest("PUT", "/v1/preview/models");
    expect(wrongVerb).toMatchObject({ status: 405, body: { detail: "Method Not Allowed" } });
    expect(wrongVerb.headers.get("allow")).toBe("POST, GET");
  });

  it("serves the console at /, its own files and browser page loads: every other request to an unknown path gets the API's JSON 404", async () => {
    const page = await fetch(`${baseUrl()}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await page.text()).toContain("<html");
    // What clients probe at the service's root: weave's trace server (WANDB_BASE_URL/traces), vLLM's
    // routes this service lacks, W&B file paths, and any made-up page.
    for (const path of ["/traces/server_info", "/tokenizer_info/x", "/pooling", "/some/page", "/models/abc", "/favicon-nope.ico"]) {
      const res = await rest("GET", path);
      expect(res.headers.get("content-type"), path).toBe("application/json");
      expect(res, path).toMatchObject({ status: 404, body: { detail: "Not Found" } });
    }
    // A browser following a link the wandb SDK prints (a run's page) lands on the console.
    const browser = await fetch(`${baseUrl()}/some-entity/some-project/runs/abc123`, { headers: { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" } });
    expect(browser.status).toBe(200);
    expect(browser.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const client = await fetch(`${baseUrl()}/some-entity/some-project/runs/abc123`, { headers: { accept: "*/*" } });
    expect(client.status).toBe(404);
    // The console's own files and a project link still load in a browser.
    const asset = (await (await fetch(`${baseUrl()}/`)).text()).match(/\/assets\/[^"]+\.js/)?.[0];
    expect(asset).toBeTruthy();
    expect((await fetch(`${baseUrl()}${asset}`)).headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await fetch(`${baseUrl()}/some-entity/some-project`, { headers: { accept: "text/html" } })).status).toBe(200);
    // A browser asking for any path under the API's roots, or a path of another shape, gets the JSON 404 too.
    const browserHeaders = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
    for (const path of ["/traces/x", "/traces/calls/stream", "/tokenizer_info/x", "/v1/x", "/api/x", "/files/a/b", "/hf", "/assets/nope", "/some-page", "/a/b/c", "/a//b"]) {
      const res = await rest("GET", path, { headers: browserHeaders });
      expect(res.headers.get("content-type"), path).toMatch(/^application\/json/);
      expect(res.status, path).toBe(404);
    }
    // The W&B file routes answer in W&B's error shape.
    const wandbFile = await rest("GET", "/wandb/files/junk");
    expect(wandbFile.headers.get("content-type")).toMatch(/^application\/json/);
    expect(wandbFile).toMatchObject({ status: 404, body: { error: expect.stringContaining("invalid") } });
  });

  it("ignores the headers the OpenAI-based clients add", async () => {
    const res = await rest("GET", "/v1/preview/whoami", {
      key,
      headers: {
        accept: "application/json",
        "user-agent": "Client/Python 1.99.0",
        "x-stainless-lang": "python",
        "x-stainless-retry-count": "0",
        "x-stainless-async": "false",
      },
    });
    expect(res.status).toBe(200);
  });

  it("takes path parameters as plain strings (no UUID check there) and the DELETE body of checkpoints", async () => {
    const res = await rest("DELETE", "/v1/preview/models/not-a-uuid/checkpoints", { key, body: { steps: [1, 2] } });
    // A valid request about a model that does not exist.
    expect(res).toMatchObject({ status: 404, body: { detail: "model not-a-uuid not found" } });
    const missingSteps = await rest("DELETE", "/v1/preview/models/not-a-uuid/checkpoints", { key, body: {} });
    expect(missingSteps.body).toEqual({ detail: [{ type: "missing", loc: ["body", "steps"], msg: "Field required", input: {} }] });
  });

  it("routes stream: true to the streaming twin and answers its errors as JSON before any event", async () => {
    const res = await rest("POST", "/v1/chat/completions", { key, body: { model: "no-such-model", messages: [{ role: "user", content: "hi" }], stream: true } });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.body).toEqual({ error: { message: "The model `no-such-model` does not exist.", type: "NotFoundError", param: null, code: 404 } });
    const streamed = await rest("POST", "/v1/chat/completions", { key, body: { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], stream: true, max_tokens: 2 } });
    expect(streamed.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(streamed.text.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  it("accepts large bodies well beyond a few MB (RL batches)", async () => {
    const trajectory = { messages_and_choices: [{ role: "user", content: "x".repeat(10_000) }], reward: 1 };
    const body = { model_id: "3c90c3cc-0d44-4b50-8888-8dd25736052a", trajectory_groups: [{ trajectories: Array.from({ length: 2_000 }, () => trajectory) }] };
    const res = await rest("POST", "/v1/preview/training-jobs", { key, body });
    expect(JSON.stringify(body).length).toBeGreaterThan(20_000_000);
    // Validated in full, then refused because the model does not exist.
    expect(res).toMatchObject({ status: 404, body: { detail: "model 3c90c3cc-0d44-4b50-8888-8dd25736052a not found" } });
  });
});
