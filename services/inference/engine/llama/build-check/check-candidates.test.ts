// The install's check of llama.cpp builds, fed builds that crash: a node-llama-cpp binary that dies
// of SIGILL when loaded, and a llama-server that serves its health check and dies of SIGILL on the
// first completion (as the AMX build did on its first batched prefill). Each is refused with its
// signal and the model it was running, the next candidate is adopted, and the report says which and
// why. The good candidates are the install's own checked builds.
import { execFile } from "node:child_process";
import { chmod, cp, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureCheckModels, type CheckModel } from "./check-models.js";
import { chooseCandidate, type CheckOptions } from "./check-candidates.js";
import { localBuildFolder } from "./local-build-link.js";
import { installedLlamaServer } from "../../llama-binaries.js";

const run = promisify(execFile);

let work: string;
let models: CheckModel[];
const lines: string[] = [];
const options = (kind: "addon" | "server"): CheckOptions => ({ kind, models, timeoutMs: 300_000, log: (line) => lines.push(line) });

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "srl-build-check-"));
  const all = await ensureCheckModels(join(work, "models"));
  models = all.filter((model) => model.name === "q4_k");
}, 120_000);
afterAll(() => rm(work, { recursive: true, force: true }));

describe("checking node-llama-cpp builds", () => {
  it("refuses a build that dies of SIGILL, adopts the next one and says why", async () => {
    // The install's checked build, with its addon replaced by one that raises SIGILL when loaded.
    const good = await realpath(localBuildFolder());
    const crashing = join(work, "crashing-addon");
    await cp(good, crashing, { recursive: true });
    await writeFile(join(work, "crash.c"), "#include <signal.h>\n__attribute__((constructor)) static void crash(void) { raise(SIGILL); }\n");
    await run("gcc", ["-shared", "-fPIC", "-o", join(crashing, "Release", "llama-addon.node"), join(work, "crash.c")]);

    const choice = await chooseCandidate(
      [
        { name: "native", prepare: async () => crashing },
        { name: "noamx", prepare: async () => good },
      ],
      options("addon"),
    );
    expect(choice.adopted).toBe("noamx");
    expect(choice.path).toBe(good);
    expect(choice.checks.map((check) => [check.candidate, check.ok])).toEqual([["native", false], ["noamx", true]]);
    expect(choice.checks[0]?.reason).toBe("the check died of SIGILL (illegal instruction) while loading llama.cpp");
    expect(choice.checks[1]?.models).toHaveLength(1);
    expect(lines).toContain("native: REFUSED: the check died of SIGILL (illegal instruction) while loading llama.cpp");
  }, 300_000);

  it("refuses a build that cannot be built", async () => {
    const good = await realpath(localBuildFolder());
    const choice = await chooseCandidate(
      [
        { name: "native", prepare: async () => { throw new Error("scripts/build-llama-addon.sh --variant native failed"); } },
        { name: "noamx", prepare: async () => good },
      ],
      options("addon"),
    );
    expect(choice.adopted).toBe("noamx");
    expect(choice.checks[0]).toMatchObject({ candidate: "native", ok: false, reason: "it could not be built: scripts/build-llama-addon.sh --variant native failed" });
  }, 300_000);
});

describe("checking llama-server builds", () => {
  it("refuses a server that dies of SIGILL on its first completion, naming the model", async () => {
    const crashing = join(work, "crashing-server");
    await mkdir(crashing, { recursive: true });
    // Answers the health check like llama-server, then dies of SIGILL on the completion.
    await writeFile(
      join(crashing, "llama-server"),
      `#!/usr/bin/env python3
import http.server, os, signal, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def do_GET(self):
        self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers(); self.wfile.write(b'{"status":"ok"}')
    def do_POST(self):
        os.kill(os.getpid(), signal.SIGILL)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
`,
    );
    await chmod(join(crashing, "llama-server"), 0o755);
    const good = await realpath(join(installedLlamaServer(), ".."));
    const choice = await chooseCandidate(
      [
        { name: "native", prepare: async () => crashing },
        { name: "noamx", prepare: async () => good },
      ],
      options("server"),
    );
    expect(choice.adopted).toBe("noamx");
    expect(choice.checks[0]?.ok).toBe(false);
    expect(choice.checks[0]?.reason).toBe("model q4_k: llama-server died of SIGILL (illegal instruction) during the completion");
    expect(choice.checks[1]).toMatchObject({ candidate: "noamx", ok: true });
  }, 300_000);
});
