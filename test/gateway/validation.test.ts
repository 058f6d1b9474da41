// Request validation answers exactly as the FastAPI service does (422 with pydantic's detail), and
// gRPC/Connect clients get the same violations as `invalid_argument` details.
import { beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { Training } from "../../gen/srl/v1/training_pb.js";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { ValidationErrorSchema } from "../../gen/srl/v1/errors_pb.js";
import { connectClient, grpcUnary, rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

const MODEL_ID = "3c90c3cc-0d44-4b50-8888-8dd25736052a";
let key = "";

beforeAll(async () => {
  key = await createKey(uniqueEntity("validation"));
});

describe("REST validation errors (422, FastAPI shape)", () => {
  it("reports every missing required body field", async () => {
    const res = await rest("POST", "/v1/preview/models", { key, body: {} });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: "missing", loc: ["body", "project"], msg: "Field required", input: {} },
        { type: "missing", loc: ["body", "name"], msg: "Field required", input: {} },
        { type: "missing", loc: ["body", "base_model"], msg: "Field required", input: {} },
      ],
    });
  });

  it("reports a missing body", async () => {
    const res = await rest("POST", "/v1/preview/training-jobs", { key });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: "missing", loc: ["body"], msg: "Field required", input: null }] });
  });

  it("reports wrong types field by field", async () => {
    const res = await rest("POST", "/v1/preview/models", {
      key,
      body: { project: 1, name: ["a"], base_model: "tiny-chat", return_existing: "maybe" },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: "string_type", loc: ["body", "project"], msg: "Input should be a valid string", input: 1 },
        { type: "string_type", loc: ["body", "name"], msg: "Input should be a valid string", input: ["a"] },
        { type: "bool_parsing", loc: ["body", "return_existing"], msg: "Input should be a valid boolean, unable to interpret input", input: "maybe" },
      ],
    });
    const jobs = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: 5, trajectory_groups: "x" } });
    expect(jobs.body).toEqual({
      detail: [
        { type: "uuid_type", loc: ["body", "model_id"], msg: "UUID input should be a string, bytes or UUID object", input: 5 },
        { type: "list_type", loc: ["body", "trajectory_groups"], msg: "Input should be a valid list", input: "x" },
      ],
    });
  });

  it("validates nested trajectory fields with their full location", async () => {
    const res = await rest("POST", "/v1/preview/training-jobs", {
      key,
      body: {
        model_id: MODEL_ID,
        trajectory_groups: [{ trajectories: [{ reward: "high", messages_and_choices: [], extra_key: 1 }], exceptions: [] }, { metadata: { a: 1 } }],
        experimental_config: { importance_sampling_level: "tokens", learning_rate: null, unknown_option: true },
      },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        {
          type: "float_parsing",
          loc: ["body", "trajectory_groups", 0, "trajectories", 0, "reward"],
          msg: "Input should be a valid number, unable to parse string as a number",
          input: "high",
        },
        { type: "missing", loc: ["body", "trajectory_groups", 1, "trajectories"], msg: "Field required", input: { metadata: { a: 1 } } },
        {
          type: "literal_error",
          loc: ["body", "experimental_config", "importance_sampling_level"],
          msg: "Input should be 'token', 'sequence', 'average' or 'geometric_average'",
          input: "tokens",
          ctx: { expected: "'token', 'sequence', 'average' or 'geometric_average'" },
        },
      ],
    });
  });

  it("rejects a body model_id that is not a UUID", async () => {
    const res = await rest("POST", "/v1/preview/training-jobs", { key, body: { model_id: "not-a-uuid", trajectory_groups: [] } });
    expect(res.status).toBe(422);
    const error = "invalid character: expected an optional prefix of `urn:uuid:` followed by [0-9a-fA-F-], found `n` at 1";
    expect(res.body).toEqual({
      detail: [{ type: "uuid_parsing", loc: ["body", "model_id"], msg: `Input should be a valid UUID, ${error}`, input: "not-a-uuid", ctx: { error } }],
    });
  });

  it("bounds limit to 1..100 on checkpoints and events", async () => {
    for (const path of [`/v1/preview/models/${MODEL_ID}/checkpoints`, `/v1/preview/training-jobs/${MODEL_ID}/events`]) {
      const low = await rest("GET", `${path}?limit=0`, { key });
      expect(low.status).toBe(422);
      expect(low.body).toEqual({
        detail: [{ type: "greater_than_equal", loc: ["query", "limit"], msg: "Input should be greater than or equal to 1", input: "0", ctx: { ge: 1 } }],
      });
      const high = await rest("GET", `${path}?limit=101`, { key });
      expect(high.body).toEqual({
        detail: [{ type: "less_than_equal", loc: ["query", "limit"], msg: "Input should be less than or equal to 100", input: "101", ctx: { le: 100 } }],
      });
      const text = await rest("GET", `${path}?limit=ten`, { key });
      expect(text.body).toEqual({
        detail: [{ type: "int_parsing", loc: ["query", "limit"], msg: "Input should be a valid integer, unable to parse string as an integer", input: "ten" }],
      });
    }
  });

  it("accepts only asc or desc as order", async () => {
    const res = await rest("GET", `/v1/preview/models/${MODEL_ID}/checkpoints?order=sideways`, { key });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [
        { type: "literal_error", loc: ["query", "order"], msg: "Input should be 'asc' or 'desc'", input: "sideways", ctx: { expected: "'asc' or 'desc'" } },
      ],
    });
  });

  it("checks the seed range exactly, beyond double precision", async () => {
    const messages = [{ role: "user", content: "hi" }];
    const res = await rest("POST", "/v1/chat/completions", {
      key,
      rawBody: `{"model": "tiny-chat", "messages": ${JSON.stringify(messages)}, "seed": 9223372036854775808}`,
    });
    // An OpenAI route: vLLM's 400 in OpenAI's shape, FastAPI's detail list beside it.
    expect(res.status).toBe(400);
    expect(res.text).toContain('"msg":"Input should be less than or equal to 9223372036854775807"');
    expect(res.body).toEqual({
      error: { message: "body.seed: Input should be less than or equal to 9223372036854775807", type: "BadRequestError", param: "seed", code: 400 },
      detail: [
        {
          type: "less_than_equal",
          loc: ["body", "seed"],
          msg: "Input should be less than or equal to 9223372036854775807",
          input: 9223372036854775808,
          ctx: { le: 9223372036854775807 },
        },
      ],
    });
    // The largest valid seed is accepted.
    const max = await rest("POST", "/v1/chat/completions", {
      key,
      rawBody: `{"model": "tiny-chat", "messages": ${JSON.stringify(messages)}, "seed": 9223372036854775807, "max_tokens": 2}`,
    });
    expect(max.status).toBe(200);
  });

  it("bounds truncate_prompt_tokens below at -1", async () => {
    const res = await rest("POST", "/v1/chat/completions/", {
      key,
      body: { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], truncate_prompt_tokens: -2 },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { message: "body.truncate_prompt_tokens: Input should be greater than or equal to -1", type: "BadRequestError", param: "truncate_prompt_tokens", code: 400 },
      detail: [
        { type: "greater_than_equal", loc: ["body", "truncate_prompt_tokens"], msg: "Input should be greater than or equal to -1", input: -2, ctx: { ge: -1 } },
      ],
    });
  });

  it("reports malformed JSON like FastAPI", async () => {
    const res = await rest("POST", "/v1/preview/models", { key, rawBody: '{"project": ' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: "json_invalid", loc: ["body", 12], msg: "JSON decode error", input: {}, ctx: { error: "Expecting value" } }] });
  });

  it("accepts nulls where the spec allows them and takes a string for stop; refuses an unknown field by name", async () => {
    const body = {
        model: "tiny-chat",
        messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] }],
        temperature: null,
        stop: "###",
        logit_bias: null,
        tools: null,
        response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } },
        structured_outputs: { _backend: "xgrammar", choice: ["a", "b"] },
        tool_choice: { type: "function", function: { name: "f" } },
    };
    const res = await rest("POST", "/v1/chat/completions", { key, body });
    // Valid JSON for the API: it passes validation and reaches the engine, which refuses the one
    // combination it cannot honour (two structured-output constraints at once), naming both.
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { message: "structured outputs: give one constraint, not response_format json_schema and structured_outputs.choice", type: "BadRequestError", param: null, code: 400 },
    });
    // A key the API does not have is never dropped silently (test/inference/request-fields.test.ts).
    const unknown = await rest("POST", "/v1/chat/completions", { key, body: { ...body, some_future_option: { nested: true } } });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ error: { type: "BadRequestError", param: "some_future_option", code: 400 } });
  });

  it("refuses null where the spec does not allow it", async () => {
    const res = await rest("POST", "/v1/chat/completions", { key, body: { messages: [{ role: "user", content: "x" }], echo: null, tool_choice: "sometimes" } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { type: "BadRequestError", param: "tool_choice", code: 400 } });
    expect((res.body as { error: { message: string } }).error.message).toBe(
      "body.tool_choice: Input should be 'none', 'auto' or 'required'; body.echo: Input should be a valid boolean",
    );
    expect({ detail: (res.body as { detail: unknown }).detail }).toEqual({
      detail: [
        { type: "literal_error", loc: ["body", "tool_choice"], msg: "Input should be 'none', 'auto' or 'required'", input: "sometimes", ctx: { expected: "'none', 'auto' or 'required'" } },
        { type: "bool_type", loc: ["body", "echo"], msg: "Input should be a valid boolean", input: null },
      ],
    });
  });
});

describe("the same violations over gRPC and Connect", () => {
  const expectedLimit = { type: "greater_than_equal", loc: ["query", "limit"], msg: "Input should be greater than or equal to 1" };

  it("gRPC: invalid_argument with a srl.v1.ValidationError detail", async () => {
    const result = await grpcUnary(Models.method.listCheckpoints, { modelId: MODEL_ID, limit: 0 }, key);
    expect(result.error?.code).toBe(3);
    const [violation] = result.error?.validation?.detail ?? [];
    expect({ type: violation?.type, msg: violation?.msg, loc: violation?.loc?.values.map((v) => v.kind.value) }).toEqual(expectedLimit);

    const uuid = await grpcUnary(Training.method.createTrainingJob, { modelId: "not-a-uuid" }, key);
    expect(uuid.error?.code).toBe(3);
    expect(uuid.error?.validation?.detail[0]?.type).toBe("uuid_parsing");

    const seed = await grpcUnary(Inference.method.createChatCompletion, { messages: [{ role: "user" }], truncatePromptTokens: -2n }, key);
    expect(seed.error?.validation?.detail.map((v) => v.type)).toEqual(["greater_than_equal"]);
  });

  it("Connect (JSON and binary): the same code and details", async () => {
    for (const flavor of ["connect-json", "connect-binary", "grpc-web"] as const) {
      const client = connectClient(Models, flavor, key);
      const error = await client.listCheckpoints({ modelId: MODEL_ID, order: "sideways", limit: 101 }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.InvalidArgument);
      const detail = error?.findDetails(ValidationErrorSchema)[0]?.detail ?? [];
      expect(detail.map((v) => [v.loc?.values.map((p) => p.kind.value).join("."), v.type])).toEqual([
        ["query.limit", "less_than_equal"],
        ["query.order", "literal_error"],
      ]);
    }
  });
});
