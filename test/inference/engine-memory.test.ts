// The engine's memory budget for contexts (ENGINE_CONTEXT_MEMORY_MB): with room for one context,
// serving two base models in turn frees the idle one each time (and says so in the log); a context
// larger than the whole budget is refused with a 503 that says what to change.
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

let roomForOne: IsolatedServer;
let roomForNone: IsolatedServer;

beforeAll(async () => {
  // One sequence of 2048 tokens on the tiny models: about 8 MB each by llama.cpp's estimate.
  [roomForOne, roomForNone] = await Promise.all([
    startIsolatedServer({ name: "memory-one", entity: "memory", env: { ENGINE_SEQUENCES: "1", ENGINE_CONTEXT_MEMORY_MB: "12" } }),
    startIsolatedServer({ name: "memory-none", entity: "memory", env: { ENGINE_SEQUENCES: "1", ENGINE_CONTEXT_MEMORY_MB: "1" } }),
  ]);
}, 180_000);
afterAll(async () => {
  await Promise.all([roomForOne?.stop(), roomForNone?.stop()]);
});

const complete = (isolated: IsolatedServer, model: string) =>
  fetch(`${isolated.server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
  });

const logLines = async (isolated: IsolatedServer, msg: string) =>
  (await readFile(isolated.server.logFile, "utf8"))
    .split("\n")
    .filter((line) => line.includes(`"msg":"${msg}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("engine memory budget", () => {
  it("frees the least recently used idle context to make room for another", async () => {
    for (const model of ["tiny-chat", "tiny-tools", "tiny-chat"]) expect((await complete(roomForOne, model)).status).toBe(200);
    const created = await logLines(roomForOne, "context created");
    expect(created.map((line) => line.context)).toEqual(["tiny-chat", "tiny-tools", "tiny-chat"]);
    for (const line of created) expect(line.contexts).toBe(1);
    const freed = await logLines(roomForOne, "context freed");
    expect(freed.map((line) => line.context)).toEqual(["tiny-chat", "tiny-tools"]);
  });

  it("refuses a context larger than the whole budget with a 503 naming the setting", async () => {
    const res = await complete(roomForNone, "tiny-chat");
    expect(res.status).toBe(503);
    const message = ((await res.json()) as { error: { message: string } }).error.message;
    expect(message).toMatch(/^a context of tiny-chat needs about \d+ MB, more than the 1 MB allowed for contexts \(ENGINE_CONTEXT_MEMORY_MB/);
    // Refused, not crashed: the same engine process answers the next request the same way.
    expect((await complete(roomForNone, "tiny-tools")).status).toBe(503);
    expect((await logLines(roomForNone, "inference engine starting")).length).toBe(1);
  });
});
