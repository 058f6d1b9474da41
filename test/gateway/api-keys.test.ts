// The ApiKeys service end to end on the shared server: an entity's key lists, creates and revokes
// keys of its own entity only; a key's text is shown once; a revoked key stops authenticating at
// once; the limits hold; gRPC serves the same service.
import { describe, expect, it } from "vitest";
import { ApiKeys } from "../../gen/srl/v1/keys_pb.js";
import { grpcUnary, rest } from "../support/clients.js";
import { createKey, uniqueEntity } from "../support/keys.js";

interface ApiKeyJson {
  prefix: string;
  entity: string;
  created_at: string;
  revoked_at: string | null;
  current: boolean;
  label: string;
}

const whoami = async (key: string) => (await rest("GET", "/v1/preview/whoami", { key })).status;

describe("API keys of an entity", () => {
  it("creates a key shown once, lists it without its text, and revokes it at once", async () => {
    const entity = uniqueEntity("keys");
    const owner = await createKey(entity);
    const created = await rest("POST", "/v1/preview/api-keys", { key: owner, body: { label: "ci runner" } });
    expect(created.status).toBe(200);
    const { key, api_key: record } = created.body as { key: string; api_key: ApiKeyJson };
    expect(key).toMatch(/^srl_[0-9A-Za-z]{43}$/);
    expect(record).toMatchObject({ prefix: key.slice(0, 12), entity, label: "ci runner", current: false, revoked_at: null });
    expect(await whoami(key)).toBe(200);

    const listed = await rest("GET", "/v1/preview/api-keys", { key: owner });
    expect(listed.status).toBe(200);
    const keys = (listed.body as { data: ApiKeyJson[] }).data;
    expect(keys.map((k) => k.prefix)).toEqual([owner.slice(0, 12), key.slice(0, 12)]);
    expect(keys.find((k) => k.current)?.prefix).toBe(owner.slice(0, 12));
    expect(listed.text).not.toContain(key);
    expect(listed.text).not.toContain(owner);

    const revoked = await rest("POST", `/v1/preview/api-keys/${key.slice(0, 12)}/revoke`, { key: owner });
    expect(revoked.status).toBe(200);
    expect((revoked.body as ApiKeyJson).revoked_at).toMatch(/^\d{4}-/);
    expect(await whoami(key)).toBe(401);
    expect(await whoami(owner)).toBe(200);
  });

  it("never reaches another entity's keys", async () => {
    const mine = await createKey(uniqueEntity("keys-a"));
    const theirs = await createKey(uniqueEntity("keys-b"));
    const refused = await rest("POST", `/v1/preview/api-keys/${theirs.slice(0, 12)}/revoke`, { key: mine });
    expect(refused.status).toBe(404);
    expect(await whoami(theirs)).toBe(200);
    const listed = (await rest("GET", "/v1/preview/api-keys", { key: mine })).body as { data: ApiKeyJson[] };
    expect(listed.data.map((k) => k.prefix)).toEqual([mine.slice(0, 12)]);
  });

  it("revokes the key in use, refuses bad input and anonymous calls", async () => {
    const key = await createKey(uniqueEntity("keys-self"));
    expect((await rest("POST", "/v1/preview/api-keys", { key, body: { label: "x".repeat(101) } })).status).toBe(422);
    expect((await rest("POST", "/v1/preview/api-keys", { body: {} })).status).toBe(401);
    expect((await rest("POST", "/v1/preview/api-keys/srl_nothing1/revoke", { key })).status).toBe(404);
    expect((await rest("POST", `/v1/preview/api-keys/${key.slice(0, 12)}/revoke`, { key })).status).toBe(200);
    expect(await whoami(key)).toBe(401);
  });

  it("is served over gRPC too", async () => {
    const entity = uniqueEntity("keys-grpc");
    const key = await createKey(entity);
    const created = await grpcUnary(ApiKeys.method.createApiKey, { label: "grpc" }, key);
    expect(created.error).toBeUndefined();
    expect(created.message?.apiKey?.entity).toBe(entity);
    const listed = await grpcUnary(ApiKeys.method.listApiKeys, {}, key);
    expect(listed.message?.data.map((k) => k.label)).toEqual(["", "grpc"]);
    expect(listed.message?.data.filter((k) => k.current)).toHaveLength(1);
  });
});
