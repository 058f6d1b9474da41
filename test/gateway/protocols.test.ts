// One port, four protocols: the same RPC through REST, Connect (JSON, binary, HTTP/2), gRPC-Web and
// gRPC gives the same answer, including the same errors.
import { beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { Messages } from "../../gen/srl/v1/messages_pb.js";
import { Responses } from "../../gen/srl/v1/responses_pb.js";
import { Tokenizer } from "../../gen/srl/v1/tokenizer_pb.js";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { connectClient, grpcUnary, rest, type ConnectFlavor } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

const flavors: ConnectFlavor[] = ["connect-json", "connect-binary", "connect-http2", "grpc-web"];
let entity = "";
let key = "";

beforeAll(async () => {
  entity = uniqueEntity("protocols");
  key = await createKey(entity);
});

describe("the same operation over every protocol", () => {
  it("GetCurrentEntity answers identically", async () => {
    const viaRest = await rest("GET", "/v1/preview/whoami", { key });
    expect(viaRest.status).toBe(200);
    expect(viaRest.headers.get("content-type")).toBe("application/json");
    expect(viaRest.body).toEqual({ entity, key_prefix: key.slice(0, 12) });

    for (const flavor of flavors) {
      const answer = await connectClient(Models, flavor, key).getCurrentEntity({});
      expect({ entity: answer.entity, key_prefix: answer.keyPrefix }, flavor).toEqual(viaRest.body);
    }
    const viaGrpc = await grpcUnary(Models.method.getCurrentEntity, {}, key);
    expect({ entity: viaGrpc.message?.entity, key_prefix: viaGrpc.message?.keyPrefix }).toEqual(viaRest.body);
  });

  it("public operations need no key on any protocol", async () => {
    const health = await rest("GET", "/v1/health");
    expect(health).toMatchObject({ status: 200, body: { status: "ok" } });
    const baseModels = await rest("GET", "/v1/preview/base-models");
    expect(baseModels.status).toBe(200);
    expect(Array.isArray(baseModels.body)).toBe(true);
    for (const flavor of flavors) {
      const client = connectClient(Models, flavor);
      expect((await client.health({})).status).toBe("ok");
      expect((await client.listBaseModels({})).models).toEqual(baseModels.body);
    }
    expect((await grpcUnary(Models.method.health, {})).message?.status).toBe("ok");
  });

  it("system check reports the API, the database and the queues", async () => {
    const res = await rest("GET", "/v1/system-check");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      api: true,
      database: { success: true, errors: [], queued: null, running: null },
      // Other files' jobs may be queued or claimed on this shared server at this moment.
      cpu_queue: { success: true, errors: [], queued: expect.any(Number), running: expect.any(Number) },
      gpu_queue: { success: true, errors: [] },
    });
    const viaGrpc = await grpcUnary(Models.method.systemCheck, {});
    expect(viaGrpc.message?.api).toBe(true);
    expect(viaGrpc.message?.database?.success).toBe(true);
  });

  it("a chat completion gives the same greedy tokens on every protocol", async () => {
    const body = { model: "tiny-chat", messages: [{ role: "user", content: "hi" }], temperature: 0, max_tokens: 6, ignore_eos: true, return_token_ids: true };
    const viaRest = await rest("POST", "/v1/chat/completions", { key, body });
    expect(viaRest.status).toBe(200);
    const tokens = (viaRest.body as { choices: { token_ids: number[] }[] }).choices[0]?.token_ids;
    expect(tokens?.length).toBe(6);
    const request = {
      model: "tiny-chat",
      messages: [{ role: "user", content: { kind: { case: "stringValue" as const, value: "hi" } } }],
      temperature: 0,
      maxTokens: 6,
      ignoreEos: true,
      returnTokenIds: true,
    };
    for (const flavor of flavors) {
      const answer = await connectClient(Inference, flavor, key).createChatCompletion(request);
      expect(answer.choices[0]?.tokenIds, flavor).toEqual(tokens);
    }
    const viaGrpc = await grpcUnary(Inference.method.createChatCompletion, request, key);
    expect(viaGrpc.message?.choices[0]?.tokenIds).toEqual(tokens);
    // The streaming twin over Connect carries the same tokens.
    const streamed: number[] = [];
    for await (const chunk of connectClient(Inference, "connect-http2", key).streamChatCompletion(request)) streamed.push(...(chunk.choices[0]?.tokenIds ?? []));
    expect(streamed).toEqual(tokens);
  });

  it("a domain error maps to the same status on every protocol", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    const viaRest = await rest("GET", `/v1/preview/models/${missing}/checkpoints`, { key });
    expect(viaRest).toMatchObject({ status: 404, body: { detail: `model ${missing} not found` } });
    for (const flavor of flavors) {
      const error = await connectClient(Models, flavor, key)
        .listCheckpoints({ modelId: missing })
        .then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error?.code, flavor).toBe(Code.NotFound);
    }
    expect((await grpcUnary(Models.method.listCheckpoints, { modelId: missing }, key)).error?.code).toBe(5);
  });
});

describe("the APIs added for agents and evaluations, over gRPC and Connect", () => {
  const text = (value: string) => fromJson(ValueSchema, value);

  it("Tokenize gives the REST tokens; Responses and Messages answer with their own shapes", async () => {
    const viaRest = await rest("POST", "/v1/tokenize", { key, body: { model: "tiny-chat", prompt: "Hello there" } });
    expect(viaRest.status).toBe(200);
    const tokens = (viaRest.body as { tokens: number[] }).tokens;
    expect(tokens.length).toBeGreaterThan(1);
    const tokenized = await grpcUnary(Tokenizer.method.tokenize, { model: "tiny-chat", prompt: "Hello there" }, key);
    expect(tokenized.message?.tokens).toEqual(tokens);
    expect((await connectClient(Tokenizer, "connect-binary", key).tokenize({ model: "tiny-chat", prompt: "Hello there" })).tokens).toEqual(tokens);

    const response = await grpcUnary(Responses.method.createResponse, { model: "tiny-chat", input: text("Say hi."), maxOutputTokens: 4, store: false }, key);
    expect(response.error).toBeUndefined();
    expect(response.message?.object).toBe("response");
    expect(["completed", "incomplete"]).toContain(response.message?.status);
    expect(response.message?.output.some((item) => item.type === "message")).toBe(true);

    const message = await grpcUnary(Messages.method.createMessage, { model: "tiny-chat", maxTokens: 4, messages: [{ role: "user", content: text("Say hi.") }] }, key);
    expect(message.error).toBeUndefined();
    expect(message.message?.type).toBe("message");
    expect(["end_turn", "max_tokens"]).toContain(message.message?.stopReason);
    expect(message.message?.usage?.outputTokens).toBeGreaterThan(0);

    // Refusals keep their codes across protocols: a missing max_tokens is invalid_argument.
    const refused = await grpcUnary(Messages.method.createMessage, { model: "tiny-chat", messages: [{ role: "user", content: text("Hi") }] }, key);
    expect(refused.error?.code).toBe(Code.InvalidArgument);
  });
});
