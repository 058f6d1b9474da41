// Starts the real service as a child process (`node --import tsx services/app/main.ts`), the
// way `npm start` runs it, and waits until it prints where it listens.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface ServerProcess {
  url: string;
  port: number;
  child: ChildProcess;
  logFile: string;
  /** Everything the process printed on stdout so far. */
  stdout(): string;
  /** SIGTERM, then waits for the exit code. */
  stop(): Promise<number | null>;
}

const repoRoot = join(import.meta.dirname, "..", "..");

export async function startServerProcess(env: Record<string, string>, name = "server"): Promise<ServerProcess> {
  const logFile = join(env.DATA_DIR ?? repoRoot, `${name}.log`);
  const log = createWriteStream(logFile, { flags: "a" });
  const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "services/app/main.ts")], {
    cwd: repoRoot,
    env: { ...process.env, HOST: "127.0.0.1", PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr?.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 120 s; see ${logFile}`)), 120_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      log.write(chunk);
      const match = /Serving on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    void exited.then(async (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${await readFile(logFile, "utf8").catch(() => "")}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    child,
    logFile,
    stdout: () => out,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}
