// API keys: Bearer tokens, stored hashed, mapped to an entity; 401 for anything else.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { API_KEY_PATTERN, generateApiKey, type ApiKeyRecord } from "../../services/gateway/auth/api-keys.js";
import { connectClient, grpcUnary, rest } from "../support/clients.js";
import { withDatabase } from "../support/db.js";
import { createKey, uniqueEntity } from "../support/keys.js";

const run = promisify(execFile);

/** `npm run keys -- ...` against the test server's database, as an operator would run it. */
async function keysCommand(...args: string[]) {
  return run("npm", ["run", "--silent", "keys", "--", ...args], {
    env: { ...process.env, MONGODB_URI: inject("mongoUri"), MONGODB_DB: inject("mongoDb") },
  });
}

const unauthenticated = { status: 401, body: { detail: "Not authenticated" } };

describe("authentication", () => {
  let key = "";
  beforeAll(async () => {
    key = await createKey(uniqueEntity("auth"));
  });

  it("refuses a request without an Authorization header", async () => {
    const res = await rest("GET", "/v1/preview/whoami");
    expect(res).toMatchObject(unauthenticated);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    // Authentication comes before validation, as in FastAPI.
    expect(await rest("POST", "/v1/preview/models", { body: {} })).toMatchObject(unauthenticated);
  });

  it("refuses another scheme, and basic credentials that are not user:key", async () => {
    const message = "Invalid authentication credentials: use 'Authorization: Bearer <API key>' (or HTTP basic with the key as password, or 'X-API-Key: <API key>')";
    // Not `Basic <raw key>`: decoded as base64, a random key holds a ":" byte now and then, and is
    // then (rightly) a wrong password, "Invalid API key".
    const basic = (text: string) => `Basic ${Buffer.from(text).toString("base64")}`;
    for (const authorization of [`Digest ${key}`, basic(key), basic(`api:`), basic("no colon at all")]) {
      const res = await rest("GET", "/v1/preview/whoami", { headers: { authorization } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: message });
    }
  });

  it("takes HTTP basic with the key as password, as the wandb SDK sends it", async () => {
    const ok = await rest("GET", "/v1/preview/whoami", { headers: { authorization: `Basic ${Buffer.from(`api:${key}`).toString("base64")}` } });
    expect(ok.status).toBe(200);
    const wrong = await rest("GET", "/v1/preview/whoami", { headers: { authorization: `Basic ${Buffer.from(`api:${key}x`).toString("base64")}` } });
    expect(wrong).toMatchObject({ status: 401, body: { detail: "Invalid API key" } });
  });

  it("takes X-API-Key (Tinker's and Anthropic's SDKs), also with Tinker's tml- prefix; Authorization wins when both come", async () => {
    for (const apiKey of [key, `tml-${key}`]) {
      const res = await rest("GET", "/v1/preview/whoami", { headers: { "x-api-key": apiKey } });
      expect(res.status, apiKey.slice(0, 8)).toBe(200);
    }
    expect(await rest("GET", "/v1/preview/whoami", { headers: { "x-api-key": `${key}x` } })).toMatchObject({ status: 401, body: { detail: "Invalid API key" } });
    expect(await rest("GET", "/v1/preview/whoami", { headers: { "x-api-key": key, authorization: "Bearer srl_wrong" } })).toMatchObject({ status: 401 });
    expect((await rest("GET", "/v1/preview/whoami", { headers: { authorization: `Bearer tml-${key}` } })).status).toBe(200);
  });

  it("refuses an unknown key", async () => {
    const res = await rest("GET", "/v1/preview/whoami", { key: "srl_" + "x".repeat(43) });
    expect(res).toMatchObject({ status: 401, body: { detail: "Invalid API key" } });
    const openai = await rest("POST", "/v1/chat/completions", { key: "nope", body: { messages: [] } });
    expect(openai.status).toBe(401);
    expect(openai.body).toEqual({ error: { message: "Invalid API key", type: "AuthenticationError", param: null, code: 401 } });
  });

  it("gives gRPC and Connect clients `unauthenticated`", async () => {
    expect((await grpcUnary(Models.method.getCurrentEntity, {})).error?.code).toBe(16);
    expect((await grpcUnary(Models.method.getCurrentEntity, {}, "srl_unknown")).error?.code).toBe(16);
    const error = await connectClient(Models, "connect-json").getCurrentEntity({}).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.Unauthenticated);
  });

  it("creates, lists and revokes keys with the keys command; a revoked key stops working at once", async () => {
    const entity = uniqueEntity("acme");
    const created = await keysCommand("create", "--entity", entity);
    const newKey = created.stdout.trim();
    expect(created.stdout).toBe(newKey + "\n"); // only the key on stdout
    expect(newKey).toMatch(API_KEY_PATTERN);
    expect((await rest("GET", "/v1/preview/whoami", { key: newKey })).body).toEqual({ entity, key_prefix: newKey.slice(0, 12) });

    const listed = await keysCommand("list");
    expect(listed.stdout).toContain(`${newKey.slice(0, 12)}\t${entity}\t`);
    expect(listed.stdout).not.toContain(newKey); // never the key itself

    await keysCommand("revoke", newKey.slice(0, 12));
    expect(await rest("GET", "/v1/preview/whoami", { key: newKey })).toMatchObject({ status: 401, body: { detail: "Invalid API key" } });
    expect((await keysCommand("list")).stdout).toMatch(new RegExp(`${newKey.slice(0, 12)}\\t${entity}\\t\\S+\\trevoked`));
  });

  it("issues keys every client accepts (40+ characters of letters and digits, no '-'), uniformly drawn", () => {
    const keys = Array.from({ length: 1000 }, generateApiKey);
    for (const generated of keys) {
      expect(generated).toMatch(API_KEY_PATTERN);
      // The wandb SDK's own check (wandb/sdk/lib/wbauth/validation.py): what follows a '-' must be
      // 40+ word characters; these keys hold no '-', so the whole key is checked.
      expect(generated).toMatch(/^\w{40,}$/);
    }
    expect(new Set(keys).size).toBe(1000);
    // Every character of the alphabet turns up, none more than chance allows (43,000 draws of 62).
    const counts = new Map<string, number>();
    for (const generated of keys) for (const char of generated.slice(4)) counts.set(char, (counts.get(char) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const count of counts.values()) expect(count).toBeGreaterThan(500);
    for (const count of counts.values()) expect(count).toBeLessThan(900);
  });

  it("still accepts a key issued in the earlier format (base64url, may hold '-')", async () => {
    const entity = uniqueEntity("old-key");
    const oldKey = "srl_" + "Ab-_".repeat(10) + "x-Y"; // 43 characters after the prefix, as randomBytes(32).toString("base64url") gave
    await withDatabase(async ({ db }) => {
      const hash = createHash("sha256").update(oldKey).digest("hex");
      await db.collection<ApiKeyRecord>("api_keys").insertOne({ _id: hash, prefix: oldKey.slice(0, 12), entity, created_at: new Date(), revoked_at: null });
    });
    expect((await rest("GET", "/v1/preview/whoami", { key: oldKey })).body).toEqual({ entity, key_prefix: oldKey.slice(0, 12) });
    expect((await grpcUnary(Models.method.getCurrentEntity, {}, oldKey)).message?.entity).toBe(entity);
  });

  it("maps each key to its own entity", async () => {
    const [a, b] = [uniqueEntity("team-a"), uniqueEntity("team-b")];
    const [keyA, keyB] = await Promise.all([createKey(a), createKey(b)]);
    expect((await rest("GET", "/v1/preview/whoami", { key: keyA })).body).toMatchObject({ entity: a });
    expect((await rest("GET", "/v1/preview/whoami", { key: keyB })).body).toMatchObject({ entity: b });
  });
});
