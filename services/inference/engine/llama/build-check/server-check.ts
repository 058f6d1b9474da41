// Child process of a llama-server build check (run by check-candidates.ts): for each model given,
// starts the llama-server binary on it, sends one completion whose prompt is prefilled in one batch
// and which then decodes a few tokens, and stops it. A server that dies is reported with its signal;
// the same JSON lines as addon-check.ts.
//   node --import tsx server-check.ts <llama-server path> <name=path>...
import { spawn } from "node:child_process";
import { describeSignal, freePort } from "../../../../core/child-process.js";

const PROMPT = "The quick brown fox jumps over the lazy dog. A batched prefill runs every matrix kernel on many rows at once; ".repeat(2);
const START_TIMEOUT_MS = 120_000;

function emit(event: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(event) + "\n");
}

async function checkModel(server: string, modelPath: string): Promise<{ ok: boolean; detail: string; amx: boolean }> {
  const port = await freePort();
  const child = spawn(server, ["-m", modelPath, "--host", "127.0.0.1", "--port", String(port), "-c", "512", "-np", "1", "-t", "2"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-3000)));
  const exited = new Promise<string>((resolve) => child.once("exit", (code, signal) => resolve(signal ? `died of ${describeSignal(signal)}` : `exited with code ${code}`)));
  let ended: string | null = null;
  void exited.then((how) => (ended = how));
  const base = `http://127.0.0.1:${port}`;
  const result = async (): Promise<{ ok: boolean; detail: string }> => {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (ended) return { ok: false, detail: `llama-server ${ended} while loading the model: ${stderr.trim().split("\n").slice(-3).join(" | ")}` };
      if (Date.now() > deadline) return { ok: false, detail: "llama-server did not become ready in time" };
      const health = await fetch(`${base}/health`).catch(() => null);
      if (health?.ok) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const response = await Promise.race([
      fetch(`${base}/completion`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: PROMPT, n_predict: 4, temperature: 0, ignore_eos: true, cache_prompt: false }),
      }).catch((error: unknown) => error instanceof Error ? error : new Error(String(error))),
      exited.then((how) => new Error(`llama-server ${how}`)),
    ]);
    if (response instanceof Error) {
      // The request may fail a moment before the exit is seen: wait for it to name the signal.
      const how = await Promise.race([exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 2_000))]);
      return { ok: false, detail: how ? `llama-server ${how} during the completion` : `the completion failed: ${response.message}` };
    }
    if (!response.ok) return { ok: false, detail: `the completion answered ${response.status}: ${(await response.text()).slice(0, 300)}` };
    const body = (await response.json()) as { tokens_predicted?: number; tokens_evaluated?: number };
    if (body.tokens_predicted !== 4) return { ok: false, detail: `the completion produced ${body.tokens_predicted} tokens instead of 4` };
    return { ok: true, detail: `prefilled ${body.tokens_evaluated} prompt tokens, decoded ${body.tokens_predicted}` };
  };
  try {
    return { ...(await result()), amx: /\bAMX_INT8 = 1\b/.test(stderr) };
  } finally {
    child.kill("SIGKILL");
    await exited;
  }
}

async function main(): Promise<void> {
  const [server, ...models] = process.argv.slice(2);
  if (!server) throw new Error("usage: server-check.ts <llama-server> <name=path>...");
  for (const spec of models) {
    const split = spec.indexOf("=");
    const name = spec.slice(0, split);
    emit({ event: "start", model: name });
    const { amx, ...outcome } = await checkModel(server, spec.slice(split + 1));
    emit({ event: "model", model: name, amx, ...outcome });
  }
}

await main();
