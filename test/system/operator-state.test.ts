// GetOperatorState on the shared server: the operator entity ("local", BOOTSTRAP_ENTITY's default)
// sees a tenant's streamed chat as a running request on its model and entity, the same number
// /metrics shows; a tenant's key is refused with the rule it broke.
import { describe, expect, inject, it } from "vitest";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { grpcUnary, rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

interface OperatorStateJson {
  read_at: string;
  database_up: boolean;
  engines: { engine: string; replica: string; up: boolean }[];
  models: { model_name: string; requests_running: number; requests_waiting: number; sequences_total: number; contexts: number }[];
  entities: { entity: string; requests_running: number; requests_waiting: number; jobs_succeeded: number }[];
}

describe("the operator's engine and queue state", () => {
  it("shows a tenant's request while it runs, as /metrics counts it", async () => {
    const operator = await createKey("local");
    const tenantEntity = uniqueEntity("operator-tenant");
    const tenant = await createKey(tenantEntity);
    const stream = new AbortController();
    const response = await fetch(`${inject("baseUrl")}/v1/chat/completions`, {
      method: "POST",
      signal: stream.signal,
      headers: { authorization: `Bearer ${tenant}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tiny-chat", messages: [{ role: "user", content: "count" }], stream: true, max_tokens: 100000, ignore_eos: true }),
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    try {
      const state = await rest("GET", "/v1/preview/operator/state", { key: operator });
      expect(state.status).toBe(200);
      const body = state.body as OperatorStateJson;
      expect(body.database_up).toBe(true);
      expect(body.engines.some((engine) => engine.up)).toBe(true);
      const model = body.models.find((m) => m.model_name === "tiny-chat");
      expect(model?.requests_running).toBeGreaterThanOrEqual(1);
      expect(model?.sequences_total).toBeGreaterThanOrEqual(1);
      expect(body.entities.find((e) => e.entity === tenantEntity)).toMatchObject({ requests_running: 1, requests_waiting: 0 });
      const metrics = await (await fetch(`${inject("baseUrl")}/metrics`, { headers: { authorization: `Bearer ${operator}` } })).text();
      expect(metrics).toContain(`vllm:num_requests_running{model_name="tiny-chat",entity="${tenantEntity}"} 1`);
    } finally {
      stream.abort();
      await reader.cancel().catch(() => undefined);
    }
    // Once the stream is gone the entity has nothing left to show.
    await expect
      .poll(async () => ((await rest("GET", "/v1/preview/operator/state", { key: operator })).body as OperatorStateJson).entities.some((e) => e.entity === tenantEntity), { timeout: 15_000 })
      .toBe(false);
  });

  it("is the operator's only, over REST and gRPC", async () => {
    const tenant = await createKey(uniqueEntity("operator-refused"));
    const refused = await rest("GET", "/v1/preview/operator/state", { key: tenant });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("BOOTSTRAP_ENTITY");
    const grpc = await grpcUnary(Models.method.getOperatorState, {}, tenant);
    expect(grpc.error?.code).toBe(7);
    const served = await grpcUnary(Models.method.getOperatorState, {}, await createKey("local"));
    expect(served.message?.databaseUp).toBe(true);
  });
});
