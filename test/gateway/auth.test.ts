// API keys: Bearer tokens, stored hashed, mapped to an entity; 401 for anything else.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { Models } from "../../gen/srl/v1/models_pb.js";
import { connectClient, grpcUnary, rest } from "../support/clients.js";
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

  it("refuses another scheme", async () => {
    const res = await rest("GET", "/v1/preview/whoami", { headers: { authorization: `Basic ${key}` } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Invalid authentication credentials: use 'Authorization: Bearer <API key>'" });
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
    expect(newKey).toMatch(/^srl_[A-Za-z0-9_-]{43}$/);
    expect((await rest("GET", "/v1/preview/whoami", { key: newKey })).body).toEqual({ entity, key_prefix: newKey.slice(0, 12) });

    const listed = await keysCommand("list");
    expect(listed.stdout).toContain(`${newKey.slice(0, 12)}\t${entity}\t`);
    expect(listed.stdout).not.toContain(newKey); // never the key itself

    await keysCommand("revoke", newKey.slice(0, 12));
    expect(await rest("GET", "/v1/preview/whoami", { key: newKey })).toMatchObject({ status: 401, body: { detail: "Invalid API key" } });
    expect((await keysCommand("list")).stdout).toMatch(new RegExp(`${newKey.slice(0, 12)}\\t${entity}\\t\\S+\\trevoked`));
  });

  it("maps each key to its own entity", async () => {
    const [a, b] = [uniqueEntity("team-a"), uniqueEntity("team-b")];
    const [keyA, keyB] = await Promise.all([createKey(a), createKey(b)]);
    expect((await rest("GET", "/v1/preview/whoami", { key: keyA })).body).toMatchObject({ entity: a });
    expect((await rest("GET", "/v1/preview/whoami", { key: keyB })).body).toMatchObject({ entity: b });
  });
});
