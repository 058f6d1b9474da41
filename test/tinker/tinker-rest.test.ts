// The Tinker API over plain HTTP as the SDK speaks it (X-API-Key with `tml-`, JSON bodies,
// forward_backward in protobuf, plain or zstd-compressed, futures polled with retrieve_future, 408
// while running, protobuf results when asked), end to end on the tiny model and the real trainer.
import { create, fromBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Tinker } from "../../gen/srl/tinker/v1/tinker_pb.js";
import { ForwardBackwardRequestSchema } from "../../gen/tinker/tinker_public_pb.js";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { grpcUnary } from "../support/clients.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";
import { decodeForwardBackward, decodeSample, forwardBackwardBody, type PlainDatum, zstdBomb, zstdStored } from "../support/tinker-wire.js";

let isolated: IsolatedServer;
let url = "";
let alice = "";
let bob = "";

beforeAll(async () => {
  isolated = await startIsolatedServer({ name: "tinker", entity: "alice", env: { TINKER_RETRIEVE_WAIT_MS: "300" } });
  url = isolated.server.url;
  alice = `tml-${isolated.key}`;
  bob = `tml-${(await new ApiKeys(isolated.db.db).create("bob")).key}`;
}, 120_000);
afterAll(() => isolated?.stop());

interface Answer {
  status: number;
  json: Record<string, unknown>;
  bytes: Uint8Array;
  contentType: string;
}

async function call(method: string, path: string, key: string | null, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const binary = body instanceof Uint8Array;
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(key ? { "x-api-key": key } : {}), ...(body !== undefined ? { "content-type": binary ? "application/x-protobuf" : "application/json" } : {}), ...headers },
    ...(body !== undefined ? { body: binary ? body : JSON.stringify(body) } : {}),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const contentType = res.headers.get("content-type") ?? "";
  const json = contentType.includes("json") ? (JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>) : {};
  return { status: res.status, json, bytes, contentType };
}

/** Polls retrieve_future as the SDK does: 408 means again. */
async function result(key: string, requestId: string, protobuf = false): Promise<Answer> {
  for (let i = 0; i < 600; i++) {
    const answer = await call("POST", "/api/v1/retrieve_future", key, { request_id: requestId, allow_metadata_only: false }, protobuf ? { accept: "application/x-protobuf" } : {});
    if (answer.status !== 408) return answer;
    expect(answer.json).toMatchObject({ type: "try_again", request_id: requestId, queue_state: "active" });
  }
  throw new Error(`no result for ${requestId}`);
}

async function newSession(key: string): Promise<string> {
  const answer = await call("POST", "/api/v1/create_session", key, { tags: [], user_metadata: null, sdk_version: "0.38.0", type: "create_session" });
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return answer.json.session_id as string;
}

async function newModel(key: string, rank = 4, seed = 7): Promise<string> {
  const session = await newSession(key);
  const future = await call("POST", "/api/v1/create_model", key, { session_id: session, model_seq_id: 0, base_model: "tiny-chat", lora_config: { rank, seed, train_unembed: false, train_mlp: true, train_attn: true }, type: "create_model" });
  expect(future.status, JSON.stringify(future.json)).toBe(200);
  const done = await result(key, future.json.request_id as string);
  expect(done.status, JSON.stringify(done.json)).toBe(200);
  expect(done.json).toMatchObject({ model_id: expect.any(String), type: "create_model" });
  return done.json.model_id as string;
}

const datum: PlainDatum = { tokens: [10, 11, 12, 13, 14, 15], targets: [11, 12, 13, 14, 15, 16], floats: { weights: [0, 0, 1, 1, 1, 1] } };

describe("sessions, auth and discovery", () => {
  it("answers healthz without a key, config and capabilities with a tml- key, 401 otherwise", async () => {
    expect(await call("GET", "/api/v1/healthz", null)).toMatchObject({ status: 200, json: { status: "ok" } });
    expect((await call("GET", "/api/v1/get_server_capabilities", null)).status).toBe(401);
    expect((await call("GET", "/api/v1/get_server_capabilities", "tml-srl_notakey")).status).toBe(401);
    const capabilities = await call("GET", "/api/v1/get_server_capabilities", alice);
    expect(capabilities.status).toBe(200);
    expect(capabilities.json.supported_models).toEqual(expect.arrayContaining([expect.objectContaining({ model_name: "tiny-chat", trainable: true, sampleable: true, max_context_length: expect.any(Number) })]));
    const config = await call("POST", "/api/v1/client/config", alice, { sdk_version: "0.38.0" });
    expect(config.json).toMatchObject({ pjwt_auth_enabled: false, proto_compress_fwdbwd: true, sample_use_retrieve_futures: false, custom_loss_server_side: false });
    // The same key as a bearer works too.
    expect((await call("GET", "/api/v1/get_server_capabilities", null, undefined, { authorization: `Bearer ${isolated.key}` })).status).toBe(200);
  });

  it("keeps sessions per entity", async () => {
    const session = await newSession(alice);
    expect((await call("POST", "/api/v1/session_heartbeat", alice, { session_id: session, type: "session_heartbeat" })).json).toEqual({ type: "session_heartbeat" });
    expect((await call("POST", "/api/v1/session_heartbeat", bob, { session_id: session, type: "session_heartbeat" })).status).toBe(404);
    expect((await call("POST", "/api/v1/create_model", bob, { session_id: session, model_seq_id: 0, base_model: "tiny-chat", lora_config: { rank: 4 } })).status).toBe(404);
    expect(((await call("GET", "/api/v1/sessions?limit=100", alice)).json.sessions as string[])).toContain(session);
    expect(((await call("GET", "/api/v1/sessions?limit=100", bob)).json.sessions as string[])).not.toContain(session);
    expect((await call("GET", `/api/v1/sessions/${session}`, alice)).json).toMatchObject({ training_run_ids: [], sampler_ids: [] });
    expect((await call("GET", `/api/v1/sessions/${session}`, bob)).status).toBe(404);
    expect((await call("GET", "/api/v1/auth/apikey/me", alice)).json).toMatchObject({ user_urn: "urn:srl:entity:alice" });
  });

  it("refuses bad requests at once with the field named", async () => {
    const session = await newSession(alice);
    const unknownBase = await call("POST", "/api/v1/create_model", alice, { session_id: session, model_seq_id: 0, base_model: "no-such-model", lora_config: { rank: 4 } });
    expect(unknownBase.status).toBe(400);
    expect(JSON.stringify(unknownBase.json)).toContain("no-such-model");
    const badRank = await call("POST", "/api/v1/create_model", alice, { session_id: session, model_seq_id: 0, base_model: "tiny-chat", lora_config: { rank: 0 } });
    expect(badRank.status).toBe(422);
    expect(JSON.stringify(badRank.json)).toContain("rank");
    expect((await call("POST", "/api/v1/retrieve_future", alice, { request_id: "request-nope" })).status).toBe(404);
    const unknownPath = await call("GET", "/api/v1/no_such_route", alice);
    expect(unknownPath.status).toBe(404);
    expect(unknownPath.contentType).toContain("application/json");
  });
});

describe("a training client", () => {
  it("trains with forward_backward (protobuf, plain and zstd) and optim_step, samples its weights on both APIs, and keeps other entities out", async () => {
    const model = await newModel(alice);
    const before = await call("POST", "/api/v1/forward_backward", alice, forwardBackwardBody(model, 1, [datum], "cross_entropy", { forwardOnly: true }));
    expect(before.status, JSON.stringify(before.json)).toBe(200);
    const forward = await result(alice, before.json.request_id as string, true);
    expect(forward.contentType).toBe("application/x-protobuf");
    const first = decodeForwardBackward(forward.bytes);
    expect(first.perDatum).toHaveLength(1);
    expect(first.perDatum[0]?.logprobs).toHaveLength(datum.tokens.length);
    const lossBefore = first.output.metrics["loss:sum"] as number;
    // The sum of -logprob * weight.
    const expected = first.perDatum[0]!.logprobs!.reduce((sum, lp, i) => sum - lp * (datum.floats!.weights![i] as number), 0);
    expect(lossBefore).toBeCloseTo(expected, 3);

    let seq = 2;
    for (let step = 0; step < 4; step++) {
      const body = forwardBackwardBody(model, seq++, [datum], "cross_entropy");
      const fb = await call("POST", "/api/v1/forward_backward", alice, step % 2 === 0 ? body : zstdStored(body), step % 2 === 0 ? {} : { "content-encoding": "zstd" });
      expect(fb.status, JSON.stringify(fb.json)).toBe(200);
      const optim = await call("POST", "/api/v1/optim_step", alice, { adam_params: { learning_rate: 0.005, beta1: 0.9, beta2: 0.95, eps: 1e-8, weight_decay: 0, grad_clip_norm: 0 }, model_id: model, seq_id: seq++, type: "optim_step" });
      expect(optim.status).toBe(200);
      expect((await result(alice, fb.json.request_id as string, true)).status).toBe(200);
      const stepped = await result(alice, optim.json.request_id as string);
      expect(stepped.json).toMatchObject({ metrics: expect.any(Object) });
    }
    const after = await call("POST", "/api/v1/forward_backward", alice, forwardBackwardBody(model, seq++, [datum], "cross_entropy", { forwardOnly: true }));
    const lossAfter = decodeForwardBackward((await result(alice, after.json.request_id as string, true)).bytes).output.metrics["loss:sum"] as number;
    expect(lossAfter).toBeLessThan(lossBefore * 0.8);

    // Sampler weights: a checkpoint the engines serve, by its tinker:// path on both APIs.
    const save = await call("POST", "/api/v1/save_weights_for_sampler", alice, { model_id: model, path: "s1", seq_id: seq++, type: "save_weights_for_sampler" });
    const saved = await result(alice, save.json.request_id as string);
    expect(saved.json).toMatchObject({ path: `tinker://${model}/sampler_weights/s1` });
    const path = saved.json.path as string;
    const sample = await call("POST", "/api/v1/asample", alice, { num_samples: 2, prompt: { chunks: [{ type: "encoded_text", tokens: [10, 11, 12] }] }, sampling_params: { max_tokens: 3, temperature: 0, stop: [] }, model_path: path, prompt_logprobs: true, type: "sample" });
    expect(sample.status, JSON.stringify(sample.json)).toBe(200);
    expect(sample.json.sample_sequence_ids).toHaveLength(2);
    const sampled = decodeSample((await result(alice, sample.json.request_id as string, true)).bytes);
    expect(sampled.sequences).toHaveLength(2);
    expect(sampled.sequences[0]?.tokens).toEqual([13, 14, 15]);
    expect(sampled.sequences[1]?.tokens).toEqual(sampled.sequences[0]?.tokens);
    expect(sampled.promptLogprobs?.[0]).toBeNaN();
    const completion = await fetch(`${url}/v1/completions`, { method: "POST", headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: path, prompt: [10, 11, 12], max_tokens: 3, temperature: 0 }) });
    expect(completion.status).toBe(200);

    // Another entity sees none of it.
    expect((await call("POST", "/api/v1/forward_backward", bob, forwardBackwardBody(model, 1, [datum], "cross_entropy"))).status).toBe(404);
    expect((await call("POST", "/api/v1/retrieve_future", bob, { request_id: save.json.request_id })).status).toBe(404);
    expect((await call("POST", "/api/v1/asample", bob, { prompt: { chunks: [{ type: "encoded_text", tokens: [10] }] }, sampling_params: { max_tokens: 1 }, model_path: path })).status).toBe(404);
    const bobCompletion = await fetch(`${url}/v1/completions`, { method: "POST", headers: { "x-api-key": bob, "content-type": "application/json" }, body: JSON.stringify({ model: path, prompt: [10], max_tokens: 1 }) });
    expect(bobCompletion.status).toBe(404);
    expect(((await call("GET", "/api/v1/training_runs", bob)).json.training_runs as unknown[]).length).toBe(0);
    const runs = await call("GET", "/api/v1/training_runs?limit=10&offset=0", alice);
    expect(runs.json.training_runs).toEqual(expect.arrayContaining([expect.objectContaining({ training_run_id: model, base_model: "tiny-chat", lora_rank: 4, last_sampler_checkpoint: expect.objectContaining({ tinker_path: path }) })]));
    expect(((await call("GET", "/api/v1/checkpoints", alice)).json.checkpoints as { tinker_path: string }[]).map((c) => c.tinker_path)).toContain(path);
    expect((await call("GET", "/api/v1/checkpoints", bob)).json.checkpoints).toEqual([]);
    const checkpoints = await call("GET", `/api/v1/training_runs/${model}/checkpoints`, alice);
    expect(checkpoints.json.checkpoints).toEqual([expect.objectContaining({ checkpoint_id: "sampler_weights/s1", checkpoint_type: "sampler", tinker_path: path })]);
    expect((await call("POST", "/api/v1/weights_info", alice, { tinker_path: path })).json).toMatchObject({ base_model: "tiny-chat", is_lora: true, lora_rank: 4 });
  }, 300_000);

  it("fails a bad batch at once, and a bomb of a body with 413", async () => {
    const model = await newModel(alice);
    const mismatch = await call("POST", "/api/v1/forward_backward", alice, forwardBackwardBody(model, 1, [{ tokens: [1, 2, 3], targets: [2, 3] }], "cross_entropy"));
    expect(mismatch.status).toBe(400);
    expect(JSON.stringify(mismatch.json)).toContain("target_tokens");
    const notProto = await call("POST", "/api/v1/forward_backward", alice, new Uint8Array([0xff, 0xff, 0xff]));
    expect(notProto.status).toBe(422);
    const bomb = await call("POST", "/api/v1/forward_backward", alice, zstdBomb(2_000), { "content-encoding": "zstd" });
    expect(bomb.status).toBe(413);
    const unknownLoss = await call("POST", "/api/v1/forward_backward", alice, forwardBackwardBody(model, 1, [datum], "no_such_loss"));
    expect(unknownLoss.status).toBe(200);
    const failed = await result(alice, unknownLoss.json.request_id as string, true);
    expect(failed.status).toBe(200);
    expect(failed.json).toMatchObject({ error: expect.stringContaining("no_such_loss"), category: "user" });
  }, 120_000);

  it("saves and loads training state: the same losses after a resume", async () => {
    const model = await newModel(alice, 4, 11);
    let seq = 1;
    const step = async (id: string, s: () => number) => {
      const fb = await call("POST", "/api/v1/forward_backward", alice, forwardBackwardBody(id, s(), [datum], "cross_entropy"));
      const loss = decodeForwardBackward((await result(alice, fb.json.request_id as string, true)).bytes).output.metrics["loss:sum"] as number;
      const optim = await call("POST", "/api/v1/optim_step", alice, { adam_params: { learning_rate: 0.02 }, model_id: id, seq_id: s() });
      expect((await result(alice, optim.json.request_id as string)).status).toBe(200);
      return loss;
    };
    const next = () => seq++;
    await step(model, next);
    const save = await call("POST", "/api/v1/save_weights", alice, { model_id: model, path: "state-a", seq_id: next(), type: "save_weights" });
    const saved = await result(alice, save.json.request_id as string);
    expect(saved.json).toMatchObject({ path: `tinker://${model}/weights/state-a` });
    const continued = [await step(model, next), await step(model, next)];

    const session = await newSession(alice);
    const load = await call("POST", "/api/v1/load_weights", alice, { session_id: session, model_seq_id: 1, path: saved.json.path, optimizer: true, type: "load_weights" });
    expect(load.status, JSON.stringify(load.json)).toBe(200);
    const loaded = await result(alice, load.json.request_id as string);
    const resumed = loaded.json.model_id as string;
    expect(resumed).not.toBe(model);
    let seq2 = 1;
    const next2 = () => seq2++;
    expect([await step(resumed, next2), await step(resumed, next2)]).toEqual(continued);
    // A sampler checkpoint is no training state.
    const sampler = await call("POST", "/api/v1/save_weights_for_sampler", alice, { model_id: model, path: "s", seq_id: next() });
    const samplerPath = (await result(alice, sampler.json.request_id as string)).json.path as string;
    expect((await call("POST", "/api/v1/load_weights", alice, { model_id: model, seq_id: next(), path: samplerPath, optimizer: false })).status).toBe(400);
    // Adapter files to download by signed URLs (no key), one by one or as an archive.
    const exported = await call("POST", "/api/v1/save_weights_external", alice, { model_id: model, path: "final", seq_id: next(), type: "save_weights_external" });
    const externalPath = (await result(alice, exported.json.request_id as string)).json.path as string;
    expect(externalPath).toBe(`tinker://${model}/external_weights/final`);
    const urls = await call("GET", `/api/v1/training_runs/${model}/checkpoints/external_weights/final/external_weights_urls`, alice);
    expect(urls.status, JSON.stringify(urls.json)).toBe(200);
    expect(Object.keys(urls.json.urls as object).sort()).toEqual(["adapter.gguf", "adapter_config.json", "adapter_model.safetensors"]);
    const gguf = await fetch((urls.json.urls as Record<string, string>)["adapter.gguf"] as string);
    expect(gguf.status).toBe(200);
    expect(new TextDecoder().decode((await gguf.arrayBuffer()).slice(0, 4))).toBe("GGUF");
    const config = (await (await fetch((urls.json.urls as Record<string, string>)["adapter_config.json"] as string)).json()) as { r: number };
    expect(config.r).toBe(4);
    const archive = await call("GET", `/api/v1/training_runs/${model}/checkpoints/external_weights/final/archive`, alice);
    const tar = await fetch(archive.json.url as string);
    expect(tar.headers.get("content-type")).toBe("application/x-tar");
    const tarText = new TextDecoder("latin1").decode(await tar.arrayBuffer());
    for (const name of ["adapter.gguf", "adapter_config.json", "adapter_model.safetensors"]) expect(tarText).toContain(name);
    const forged = (archive.json.url as string).replace(/checkpoint_files\/[^.]+/, "checkpoint_files/eyJmb3JnZWQiOjF9");
    expect((await fetch(forged)).status).toBe(403);
    expect((await call("GET", `/api/v1/training_runs/${model}/checkpoints/weights/state-a/external_weights_urls`, alice)).status).toBe(400);
    expect((await call("GET", `/api/v1/training_runs/${model}/checkpoints/external_weights/final/external_weights_urls`, bob)).status).toBe(404);
    expect((await call("PUT", `/api/v1/training_runs/${model}/checkpoints/external_weights/final/ttl`, alice, { ttl_seconds: 3600 })).status).toBe(200);
    const listed = (await call("GET", `/api/v1/training_runs/${model}/checkpoints`, alice)).json.checkpoints as { checkpoint_id: string; expires_at: string | null }[];
    expect(Date.parse(listed.find((c) => c.checkpoint_id === "external_weights/final")?.expires_at ?? "")).toBeGreaterThan(Date.now());

    // Checkpoints can be deleted; a deleted sampler checkpoint is no longer a model name.
    expect((await call("DELETE", `/api/v1/training_runs/${model}/checkpoints/sampler_weights/s`, alice)).status).toBe(200);
    expect((await call("POST", "/api/v1/weights_info", alice, { tinker_path: samplerPath })).status).toBe(404);
  }, 300_000);
});

describe("the same service over Connect and gRPC", () => {
  it("creates a session and a training client, runs a command and reads its typed result", async () => {
    const client = createClient(Tinker, createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true, interceptors: [(next) => (req) => (req.header.set("x-api-key", alice), next(req))] }));
    const session = await client.createSession({ sdkVersion: "connect", type: "create_session" });
    const future = await client.createModel({ sessionId: session.sessionId, baseModel: "tiny-chat", loraConfig: { rank: 2n, trainUnembed: false } });
    let created;
    for (;;) {
      const answer = await client.retrieveFuture({ requestId: future.requestId });
      if (answer.result.case === "tryAgain") continue;
      created = answer.result;
      break;
    }
    expect(created.case).toBe("createModel");
    const modelId = created.case === "createModel" ? created.value.modelId : "";
    const body = fromBinary(ForwardBackwardRequestSchema, forwardBackwardBody(modelId, 1, [datum], "cross_entropy", { forwardOnly: true }));
    const fb = await client.forwardBackward(create(ForwardBackwardRequestSchema, body));
    for (;;) {
      const answer = await client.retrieveFuture({ requestId: fb.requestId });
      if (answer.result.case === "tryAgain") continue;
      expect(answer.result.case).toBe("forwardBackward");
      if (answer.result.case === "forwardBackward") expect(answer.result.value.metrics["loss:sum"]).toBeGreaterThan(0);
      break;
    }
    const info = await grpcUnary(Tinker.method.getInfo, { modelId }, isolated.key, new URL(url).host);
    expect(info.error).toBeUndefined();
    expect(info.message).toMatchObject({ modelId, isLora: true, modelName: "tiny-chat" });
    const other = await grpcUnary(Tinker.method.getInfo, { modelId }, bob.slice(4), new URL(url).host);
    expect(other.error?.code).toBe(5);
  }, 120_000);
});
