// A model that crashes llama.cpp natively (SIGILL, as an AMX build did on a CPU it could not run
// on) is not restarted into the same crash forever: the engine process, forced onto a crashing path
// for one base model (ENGINE_FAULT_INJECTION), dies; the second crash in a row refuses that model
// with the cause (no third engine start for it) while other models are served; and where the
// install checked node-llama-cpp's prebuilt binary, a crash of the local build moves the engine
// onto that one instead.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prebuiltIsSafeFallback, readBinariesReport } from "../../services/inference/engine/llama-binaries.js";
import { ensureBuiltInModel } from "../../services/weights/tiny-model.js";
import { startIsolatedServer, type IsolatedServer } from "../support/isolated-server.js";

const complete = (isolated: IsolatedServer, model: string) =>
  fetch(`${isolated.server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${isolated.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 3, ignore_eos: true }),
  });

const enginesStarted = async (isolated: IsolatedServer) => [...(await readFile(isolated.server.logFile, "utf8")).matchAll(/"inference engine starting"/g)].length;

/** A server with a base model "crashy" (the tiny model's weights under another name) the engine dies on. */
async function crashyServer(name: string, env: Record<string, string>): Promise<IsolatedServer> {
  const weightsDir = await mkdtemp(join(tmpdir(), "srl-crashy-"));
  const weights = await ensureBuiltInModel("tiny-chat", weightsDir);
  const isolated = await startIsolatedServer({ name, entity: "crashes", env: { ENGINE_SEQUENCES: "2", BASE_MODELS: `crashy=${weights}`, ...env } });
  const stop = isolated.stop.bind(isolated);
  return { ...isolated, stop: async () => (await stop(), await rm(weightsDir, { recursive: true, force: true })) };
}

describe("a model that crashes the engine twice in a row, with no other binary to move to", () => {
  let isolated: IsolatedServer;
  beforeAll(async () => {
    isolated = await crashyServer("crash-loop", {
      // The prebuilt binary from the start: there is nothing to fall back to.
      ENGINE_BINARY: "prebuilt",
      ENGINE_FAULT_INJECTION: "crashy=SIGILL",
    });
  }, 180_000);
  afterAll(() => isolated?.stop());

  it("is refused with the cause after the second crash, without a third start, while another model is served", async () => {
    expect((await complete(isolated, "tiny-chat")).status).toBe(200);
    const first = await complete(isolated, "crashy");
    expect(first.status).toBe(503);
    // The first crash says what happened and what a second one does.
    const warning = ((await first.json()) as { error: { message: string } }).error.message;
    expect(warning).toContain("the inference engine crashed (SIGILL (illegal instruction)) while running base model crashy");
    expect(warning).toContain("if crashy crashes the engine a second time in a row it is refused until the server restarts");
    const second = await complete(isolated, "crashy");
    expect(second.status).toBe(503);
    const refusal = ((await second.json()) as { error: { message: string } }).error.message;
    expect(refusal).toContain("model crashy crashed the inference engine twice in a row (SIGILL (illegal instruction))");
    expect(refusal).toContain("so it is refused until the server restarts: sending the request again will not help");
    expect(refusal).toContain("For the server's operator: check that the model file is a valid GGUF");
    expect(refusal).not.toMatch(/\bretry\b/);
    const started = await enginesStarted(isolated);
    // From now on the answer comes at once, from the gateway: no engine start, no crash.
    const began = Date.now();
    const third = await complete(isolated, "crashy");
    expect(third.status).toBe(503);
    expect(((await third.json()) as { error: { message: string } }).error.message).toBe(refusal);
    expect(Date.now() - began).toBeLessThan(5_000);
    const served = await complete(isolated, "tiny-chat");
    expect(served.status).toBe(200);
    expect(await enginesStarted(isolated)).toBe(started + 1); // one start, for tiny-chat after the crash
    const again = await complete(isolated, "crashy");
    expect(again.status).toBe(503);
    expect(await enginesStarted(isolated)).toBe(started + 1);
    const log = await readFile(isolated.server.logFile, "utf8");
    expect([...log.matchAll(/"model refused: it crashed the inference engine twice in a row"/g)]).toHaveLength(1);
    expect(log).toContain('"signal":"SIGILL (illegal instruction)"');
  }, 180_000);
});

describe("a local build that crashes twice in a row on a model, where the prebuilt binary passed its check", () => {
  let isolated: IsolatedServer;
  beforeAll(async () => {
    expect(prebuiltIsSafeFallback(readBinariesReport()), "the install's report (.cache/llama-binaries.json) should show a local build in use and the prebuilt binary passing its check; run bash scripts/install.sh").toBe(true);
    isolated = await crashyServer("crash-fallback", {
      ENGINE_FAULT_INJECTION: "crashy=SIGSEGV@localBuild",
    });
  }, 180_000);
  afterAll(() => isolated?.stop());

  it("moves the engine onto the prebuilt binary, which serves the model", async () => {
    expect((await complete(isolated, "crashy")).status).toBe(503);
    const moved = await complete(isolated, "crashy");
    expect(moved.status).toBe(503);
    // Said to the client: what changed, and that sending it again now works.
    expect(((await moved.json()) as { error: { message: string } }).error.message).toContain("it now runs on node-llama-cpp's prebuilt llama.cpp binary instead of the local build. Send the request again.");
    const served = await complete(isolated, "crashy");
    expect(served.status).toBe(200);
    expect((await complete(isolated, "tiny-chat")).status).toBe(200);
    const log = await readFile(isolated.server.logFile, "utf8");
    expect([...log.matchAll(/the engine moves to node-llama-cpp's prebuilt binary/g)]).toHaveLength(1);
    expect(log).toContain('"signal":"SIGSEGV (segmentation fault)"');
    expect(log).toMatch(/llama.cpp binary loaded: node-llama-cpp's prebuilt one/);
  }, 180_000);
});
