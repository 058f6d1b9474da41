// llama.cpp's own server as the benchmark's reference: built once by the install from the llama.cpp
// source node-llama-cpp ships and checked on real models (scripts/build-llama-server.sh, cached
// outside the clone, linked as .cache/llama-server), started on a free port with the same GGUF, and
// stopped when done.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { installedLlamaServer } from "../../services/inference/engine/llama-binaries.js";

/** The directory of the llama-server the install built and checked (the bench commands run the install first). */
export async function llamaServerBinaries(): Promise<string> {
  return dirname(realpathSync(installedLlamaServer()));
}

export interface LlamaServer {
  url: string;
  stop(): Promise<void>;
}

/** `args`: llama-server's own flags beyond the model and the address (threads, slots). */
export async function startLlamaServer(binaries: string, modelPath: string, args: string[]): Promise<LlamaServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(join(binaries, "llama-server"), ["-m", modelPath, "--host", "127.0.0.1", "--port", String(port), "--no-webui", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`llama-server exited (${child.exitCode}):\n${log}`);
    const healthy = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (healthy) break;
    if (Date.now() > deadline) throw new Error(`llama-server did not become healthy in 120 s:\n${log}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
