import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEngines } from "./engines-config.js";

describe("ENGINES", () => {
  it("is empty when unset, and fills the documented defaults", () => {
    expect(parseEngines(undefined)).toEqual([]);
    expect(parseEngines("  ")).toEqual([]);
    const [entry] = parseEngines(JSON.stringify({ qwen: { kind: "vllm", replicas: ["http://gpu-1:8000/", "https://gpu-2:8000"] } }));
    expect(entry).toEqual({
      base: "qwen",
      kind: "vllm",
      replicas: ["http://gpu-1:8000", "https://gpu-2:8000"],
      launch: null,
      servedModelName: "",
      apiKey: "",
      adapterDir: "",
      replicaAdapterDir: "",
      maxAdapters: 4,
      healthIntervalMs: 2000,
      connectTimeoutMs: 10_000,
    });
  });

  it("reads llama-server processes to launch, inline or from a file", async () => {
    const config = { tiny: { kind: "llama-server", launch: { count: 2, threads: 1 } } };
    const dir = await mkdtemp(join(tmpdir(), "srl-engines-"));
    try {
      await writeFile(join(dir, "engines.json"), JSON.stringify(config));
      for (const raw of [JSON.stringify(config), join(dir, "engines.json")]) {
        expect(parseEngines(raw)[0]?.launch).toEqual({ count: 2, binary: "llama-server", threads: 1, slots: 4, contextPerSlot: 0, args: [] });
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("names the entry and field of every mistake", () => {
    const cases: [unknown, string][] = [
      [[], "ENGINES: must be a JSON object keyed by base model name"],
      [{ a: { kind: "sglang", replicas: ["http://x"] } }, 'ENGINES["a"].kind: "llama-server" or "vllm"'],
      [{ a: { kind: "vllm" } }, 'ENGINES["a"]: give replicas (URLs) or launch'],
      [{ a: { kind: "vllm", replicas: ["ftp://x"] } }, 'ENGINES["a"].replicas: an array of http(s) base URLs'],
      [{ a: { kind: "vllm", replicas: ["http://x"], maxAdapters: 0 } }, 'ENGINES["a"].maxAdapters: an integer from 1 to 1024'],
      [{ a: { kind: "vllm", replicas: ["http://x"], replica: [] } }, 'ENGINES["a"]: unknown field "replica"'],
      [{ a: { kind: "vllm", launch: {} } }, 'ENGINES["a"].launch: only llama-server replicas can be started by this service'],
      [{ a: { kind: "llama-server", launch: { count: 1, port: 3 } } }, 'ENGINES["a"].launch: unknown field "port"'],
    ];
    for (const [config, message] of cases) expect(() => parseEngines(JSON.stringify(config))).toThrow(message);
    expect(() => parseEngines("/no/such/engines.json")).toThrow(/ENGINES: not a JSON object or a readable JSON file/);
  });
});
