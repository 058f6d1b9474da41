// Evaluations end to end on a real tiny model: a real SFT job makes step 1, then prompt sets are
// run on step 0 (the base model) and step 1 side by side; every score is recomputed here from the
// outputs the server returns. Also the refusals, a catastrophic regex (the server keeps answering),
// another entity's view, and deletion with the model.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import Ajv2020 from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Evaluations } from "../../gen/srl/v1/evaluations_pb.js";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { followJob as followJobAt } from "../support/art-client.js";
import { rest as restAt } from "../support/clients.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

interface Output {
  step: number;
  text: string;
  passed: boolean;
  reason: string;
  finish_reason: string;
}
interface Row {
  prompt: string;
  expected?: string;
  outputs: Output[];
}
interface Score {
  step: number;
  passed: number;
  total: number;
  score: number;
}
interface EvaluationJson {
  id: string;
  model_id: string;
  name: string;
  created_at: string;
  metric: Record<string, unknown>;
  steps: number[];
  scores: Score[];
  rows?: Row[];
  system?: string;
  max_tokens: number;
  temperature: number;
  duration: number;
}

const entity = "evaluator";
let isolated: IsolatedServer;
let key = "";
let otherKey = "";
let modelId = "";
const rest = (method: string, path: string, options: Parameters<typeof restAt>[2] = {}) => restAt(method, path, { ...options, base: isolated.server.url });
const PROMPTS = ["2+2?", "Capital of France?", "Say hello.", "Name a colour."];
const items = PROMPTS.map((prompt) => ({ prompt }));
const TRAINED = ['{"answer": 4}', '{"answer": "Paris"}'];

async function evaluate(body: Record<string, unknown>, apiKey = key, model = modelId) {
  return rest("POST", `/v1/preview/models/${model}/evaluations`, { key: apiKey, body });
}

async function evaluated(body: Record<string, unknown>): Promise<EvaluationJson> {
  const res = await evaluate(body);
  expect(res.status, res.text).toBe(200);
  return res.body as EvaluationJson;
}

/** Checks the evaluation's shape and that its scores count the outputs' verdicts; returns the rows. */
function checkScores(evaluation: EvaluationJson, steps: number[], verdict: (text: string, row: Row) => { passed: boolean; reason: string }): Row[] {
  const rows = evaluation.rows ?? [];
  expect(evaluation.steps).toEqual(steps);
  expect(rows.map((row) => row.prompt)).toEqual(PROMPTS);
  for (const row of rows) {
    expect(row.outputs.map((o) => o.step)).toEqual(steps);
    for (const output of row.outputs) {
      expect(["stop", "length"]).toContain(output.finish_reason);
      expect({ passed: output.passed, reason: output.reason }, JSON.stringify(output.text)).toEqual(verdict(output.text, row));
    }
  }
  expect(evaluation.scores).toEqual(
    steps.map((step, s) => {
      const passed = rows.filter((row) => verdict((row.outputs[s] as Output).text, row).passed).length;
      return { step, passed, total: rows.length, score: passed / rows.length };
    }),
  );
  return rows;
}

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "evaluations", entity });
  key = isolated.key;
  otherKey = (await new ApiKeys(isolated.db.db).create("someone-else")).key;
  const model = await rest("POST", "/v1/preview/models", { key, body: { project: "evals", name: "agent", base_model: "tiny-chat" } });
  expect(model.status, model.text).toBe(200);
  modelId = (model.body as { id: string }).id;
  // A real job makes step 1: it answers the first two prompts in JSON, one valid against the schema below, one not.
  const lines = Array.from({ length: 24 }, (_, i) => JSON.stringify({ messages: [{ role: "user", content: PROMPTS[i % 2] }, { role: "assistant", content: TRAINED[i % 2] }] }));
  const data = await rest("POST", "/v1/preview/artifacts?project=evals&name=sft&type=dataset&filename=train.jsonl", { key, rawBody: lines.join("\n") + "\n", headers: { "content-type": "application/jsonl" } });
  expect(data.status, data.text).toBe(200);
  const job = await rest("POST", "/v1/preview/sft-training-jobs", { key, body: { model_id: modelId, training_data_url: (data.body as { url: string }).url, config: { batch_size: 2, learning_rate: 0.01 } } });
  expect(job.status, job.text).toBe(200);
  const outcome = await followJobAt(key, (job.body as { id: string }).id, modelId, isolated.server.url);
  expect(outcome.terminal.type, JSON.stringify(outcome.terminal.data)).toBe("training_ended");
  expect(outcome.step).toBe(1);
}, 240_000);
afterAll(() => isolated?.stop());

describe("running an evaluation", () => {
  let first: EvaluationJson;

  it("scores a regex on steps 0 and 1 from their outputs, which differ", async () => {
    first = await evaluated({ steps: [0, 1], items, metric: { type: "regex", pattern: "[aeiou]{2}|\\d", flags: "i" }, max_tokens: 16 });
    const regex = /[aeiou]{2}|\d/i;
    const rows = checkScores(first, [0, 1], (text) => (regex.test(text) ? { passed: true, reason: "" } : { passed: false, reason: "no match for /[aeiou]{2}|\\d/i" }));
    expect(first).toMatchObject({ model_id: modelId, max_tokens: 16, metric: { type: "regex", pattern: "[aeiou]{2}|\\d", flags: "i" } });
    expect(first.temperature).toBe(0);
    expect(first.name).toMatch(/^regex \d{4}-\d\d-\d\dT/);
    expect(first.duration).toBeGreaterThan(0);
    // The trained adapter answers differently from the base model somewhere.
    expect(rows.some((row) => row.outputs[0]?.text !== row.outputs[1]?.text)).toBe(true);
  });

  it("greedy reruns give the same outputs; exact match on them passes exactly where they are equal", async () => {
    const stepZero = (first.rows ?? []).map((row) => row.outputs[0]?.text ?? "");
    const again = await evaluated({ steps: [0, 1], items, metric: { type: "regex", pattern: "x" }, max_tokens: 16 });
    expect((again.rows ?? []).map((row) => row.outputs.map((o) => o.text))).toEqual((first.rows ?? []).map((row) => row.outputs.map((o) => o.text)));

    // Step 1 first: the outputs follow `steps`. Case differs from the expected text, so only ignore_case passes it.
    const expectedItems = PROMPTS.map((prompt, i) => ({ prompt, expected: ` ${(stepZero[i] ?? "").toUpperCase()} ` }));
    const exact = await evaluated({ steps: [1, 0], items: expectedItems, metric: { type: "exact_match", ignore_case: true }, max_tokens: 16, name: "echo" });
    expect(exact.name).toBe("echo");
    const fold = (text: string) => text.trim().toLowerCase();
    checkScores(exact, [1, 0], (text, row) => (fold(text) === fold(row.expected ?? "") ? { passed: true, reason: "" } : { passed: false, reason: `expected '${(row.expected ?? "").trim()}'` }));
    expect(exact.scores[1]).toEqual({ step: 0, passed: 4, total: 4, score: 1 });
    const caseSensitive = await evaluated({ steps: [0], items: expectedItems, metric: { type: "exact_match" }, max_tokens: 16 });
    checkScores(caseSensitive, [0], (text, row) => (text.trim() === (row.expected ?? "").trim() ? { passed: true, reason: "" } : { passed: false, reason: `expected '${(row.expected ?? "").trim()}'` }));
  });

  it("scores a JSON schema: parsed, validated, the first error named", async () => {
    const schema = { type: "object", properties: { answer: { type: "integer" } }, required: ["answer"] };
    const evaluation = await evaluated({ steps: [0, 1], items, metric: { type: "json_schema", schema }, max_tokens: 12, temperature: 0 });
    const validate = new Ajv2020({ strict: false }).compile(schema);
    checkScores(evaluation, [0, 1], (text) => {
      let value: unknown;
      try {
        const trimmed = text.trim();
        value = JSON.parse(/^```(?:json)?[ \t]*\n([\s\S]*?)\n?```$/.exec(trimmed)?.[1] ?? trimmed);
      } catch (error) {
        return { passed: false, reason: `not JSON: ${(error as Error).message}` };
      }
      if (validate(value)) return { passed: true, reason: "" };
      const first = validate.errors?.[0];
      return { passed: false, reason: `${first?.instancePath || "/"} ${first?.message}` };
    });
    // Step 1 was trained to answer in JSON; the base model's tokens are noise.
    expect(evaluation.scores[1]?.passed).toBeGreaterThan(evaluation.scores[0]?.passed ?? 0);
  });

  it("lists newest first without rows, reads one whole over REST and Connect, deletes it", async () => {
    // Sent as the README's `curl -d` sends it (form-encoded content type, JSON body).
    const sent = await rest("POST", `/v1/preview/models/${modelId}/evaluations`, {
      key,
      rawBody: JSON.stringify({ steps: [1], items: items.slice(0, 1), metric: { type: "regex", pattern: "." }, max_tokens: 4, name: "latest", system: "Be brief." }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(sent.status, sent.text).toBe(200);
    const made = sent.body as EvaluationJson;
    expect(made.system).toBe("Be brief.");
    const list = await rest("GET", `/v1/preview/models/${modelId}/evaluations?limit=2`, { key });
    expect(list.status).toBe(200);
    const data = (list.body as { object: string; data: EvaluationJson[] }).data;
    expect((list.body as { object: string }).object).toBe("list");
    expect(data.map((e) => e.name)[0]).toBe("latest");
    expect(data.length).toBe(2);
    for (const summary of data) expect(summary.rows ?? []).toEqual([]);
    expect(data[0]).toMatchObject({ id: made.id, scores: made.scores, steps: [1] });

    const got = await rest("GET", `/v1/preview/evaluations/${made.id}`, { key });
    expect(got.body).toEqual(made);
    const client = createClient(
      Evaluations,
      createConnectTransport({ baseUrl: isolated.server.url, httpVersion: "1.1", interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${key}`), next(req))] }),
    );
    const viaConnect = await client.getEvaluation({ evaluationId: made.id });
    expect(viaConnect.rows.map((row) => row.outputs.map((o) => o.text))).toEqual((made.rows ?? []).map((row) => row.outputs.map((o) => o.text)));
    expect(viaConnect.scores.map((s) => ({ step: s.step, passed: s.passed, total: s.total, score: s.score }))).toEqual(made.scores);

    expect((await rest("DELETE", `/v1/preview/evaluations/${made.id}`, { key })).body).toEqual({ id: made.id, deleted: true });
    expect((await rest("GET", `/v1/preview/evaluations/${made.id}`, { key })).status).toBe(404);
    expect((await rest("DELETE", `/v1/preview/evaluations/${made.id}`, { key })).status).toBe(404);
  });
});

describe("refusals", () => {
  it("names the missing step, a repeated step, the item without expected, a bad pattern or schema", async () => {
    const regex = { type: "regex", pattern: "a" };
    const detail = async (body: Record<string, unknown>) => {
      const res = await evaluate(body);
      return { status: res.status, detail: (res.body as { detail: unknown }).detail };
    };
    expect(await detail({ steps: [0, 7], items, metric: regex })).toEqual({ status: 404, detail: `model ${modelId} has no checkpoint at step 7` });
    expect(await detail({ steps: [1, 1], items, metric: regex })).toEqual({ status: 400, detail: "steps must be distinct: step 1 is given twice" });
    expect(await detail({ steps: [-1], items, metric: regex })).toEqual({ status: 400, detail: "steps[0] must be 0 or more, not -1" });
    expect(await detail({ steps: [], items, metric: regex })).toMatchObject({ status: 400 });
    expect(await detail({ steps: [0], items: [], metric: regex })).toEqual({ status: 400, detail: "items must hold at least one prompt" });
    expect(await detail({ steps: [0, 1, 2, 3, 4], items, metric: regex })).toMatchObject({ status: 422 });
    expect(await detail({ steps: [0], items: [{ prompt: "a", expected: "b" }, { prompt: "c" }], metric: { type: "exact_match" } })).toEqual({
      status: 400,
      detail: "items[1].expected is required: exact_match compares each output with its item's expected text",
    });
    expect(await detail({ steps: [0], items, metric: { type: "regex", pattern: "(a" } })).toMatchObject({ status: 400, detail: expect.stringMatching(/^metric\.pattern is not a valid regular expression: Invalid regular expression: \/\(a\/: Unterminated group/) });
    expect(await detail({ steps: [0], items, metric: { type: "regex", pattern: "a", flags: "g" } })).toEqual({ status: 400, detail: "metric.flags may only hold i, m, s and u, not 'g'" });
    expect(await detail({ steps: [0], items, metric: { type: "json_schema", schema: { type: "nope" } } })).toMatchObject({ status: 400, detail: expect.stringMatching(/^metric\.schema does not compile: schema is invalid: data\/type must be equal to one of the allowed values/) });
    expect(await detail({ steps: [0], items, metric: { type: "json_schema", schema: { $ref: "http://127.0.0.1:9/x.json" } } })).toMatchObject({ status: 400, detail: expect.stringMatching(/^metric\.schema does not compile: can't resolve reference/) });
    expect(await detail({ steps: [0], items, metric: { type: "bleu" } })).toMatchObject({ status: 422 });
    // Nothing was kept of the refused ones.
    const list = await rest("GET", `/v1/preview/models/${modelId}/evaluations?limit=100`, { key });
    expect((list.body as { data: EvaluationJson[] }).data.every((e) => e.steps.every((step) => step === 0 || step === 1))).toBe(true);
  });

  it("a catastrophic regex fails its outputs as too slow while the server keeps answering", async () => {
    const latencies: number[] = [];
    let running = true;
    const probe = (async () => {
      while (running) {
        const started = performance.now();
        expect((await rest("GET", "/v1/health")).status).toBe(200);
        latencies.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    // `([\s\S]+)+\0` on any text without a NUL tries every split of it: 2^n steps for n characters.
    const evaluation = await evaluated({ steps: [0, 1], items, metric: { type: "regex", pattern: "([\\s\\S]+)+\\u0000" }, max_tokens: 24 }).finally(() => (running = false));
    await probe;
    const outputs = (evaluation.rows ?? []).flatMap((row) => row.outputs);
    const long = outputs.filter((o) => o.text.length >= 40);
    expect(long.length).toBeGreaterThan(0);
    for (const output of long) expect(output).toMatchObject({ passed: false, reason: "the pattern took too long" });
    expect(evaluation.scores.map((s) => s.passed)).toEqual([0, 0]);
    expect(latencies.length).toBeGreaterThan(2);
    expect(Math.max(...latencies)).toBeLessThan(1_500);
  });
});

describe("ownership", () => {
  it("another entity sees no evaluation, lists nothing, cannot evaluate the model", async () => {
    const mine = await evaluated({ steps: [0], items: items.slice(0, 1), metric: { type: "regex", pattern: "." }, max_tokens: 4 });
    const absent = { detail: `evaluation ${mine.id} not found` };
    expect(await rest("GET", `/v1/preview/evaluations/${mine.id}`, { key: otherKey })).toMatchObject({ status: 404, body: absent });
    expect(await rest("DELETE", `/v1/preview/evaluations/${mine.id}`, { key: otherKey })).toMatchObject({ status: 404, body: absent });
    expect((await rest("GET", `/v1/preview/models/${modelId}/evaluations`, { key: otherKey })).status).toBe(404);
    expect((await evaluate({ steps: [0], items, metric: { type: "regex", pattern: "." } }, otherKey)).status).toBe(404);
    expect((await rest("GET", `/v1/preview/evaluations/${mine.id}`, { key })).status).toBe(200);
  });

  it("deleting the model deletes its evaluations", async () => {
    const model = await rest("POST", "/v1/preview/models", { key, body: { project: "evals", name: "short-lived", base_model: "tiny-chat" } });
    const id = (model.body as { id: string }).id;
    const made = (await evaluate({ steps: [0], items: items.slice(0, 1), metric: { type: "regex", pattern: "." }, max_tokens: 4 }, key, id)).body as EvaluationJson;
    const kept = await evaluated({ steps: [0], items: items.slice(0, 1), metric: { type: "regex", pattern: "." }, max_tokens: 4 });
    const evaluations = isolated.db.db.collection("evaluations");
    expect(await evaluations.countDocuments({ model_id: id })).toBe(1);
    expect((await rest("DELETE", `/v1/preview/models/${id}`, { key })).status).toBe(200);
    expect(await evaluations.countDocuments({ model_id: id })).toBe(0);
    expect((await rest("GET", `/v1/preview/evaluations/${made.id}`, { key })).status).toBe(404);
    expect((await rest("GET", `/v1/preview/evaluations/${kept.id}`, { key })).status).toBe(200);
  });
});
