// runTrainingJob (see ./api.ts): runs one training job in a worker thread, so the jax-js compute
// never blocks the server's event loop, and relays its progress.
//
// The thread must load .ts sources. `execArgv: ["--import", "tsx"]` does not work on Node 20 (the
// worker's entry is resolved before the hooks apply: ERR_UNKNOWN_FILE_EXTENSION, measured on
// 20.20), so the worker starts from a tiny eval'd ES module bootstrap that registers tsx's ESM
// hooks and then imports runner/worker.ts. tsx is located from this file, not from the cwd.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { TrainingInputError, type TrainingJobInput, type TrainingJobResult, type TrainingProgress } from "./api.js";
import { TrainingAbortedError } from "./runner/progress.js";
import type { FromWorker, ToWorker } from "./runner/protocol.js";

export { TrainingInputError } from "./api.js";
export type { TrainingJobInput, TrainingJobResult, TrainingProgress } from "./api.js";
export { TrainingAbortedError } from "./runner/progress.js";

const WORKER_URL = new URL("./runner/worker.ts", import.meta.url);
/** After an abort the job stops at the end of its current step; a step that hangs is cut off. */
const ABORT_GRACE_MS = 60_000;
const WORKER_EXIT_GRACE_MS = 5_000;

let bootstrap: string | undefined;
function workerBootstrap(): string {
  if (!bootstrap) {
    const pkgPath = createRequire(import.meta.url).resolve("tsx/package.json");
    const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { exports?: Record<string, { import?: { default?: string } } | string> };
    const entry = pkg.exports?.["./esm/api"];
    const rel = typeof entry === "object" ? entry.import?.default : undefined;
    if (!rel) throw new Error("tsx/esm/api has no ESM entry; cannot start the training worker");
    const api = pathToFileURL(join(dirname(pkgPath), rel)).href;
    bootstrap = `import(${JSON.stringify(api)}).then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;
  }
  return bootstrap;
}

export function runTrainingJob(input: TrainingJobInput, progress: TrainingProgress, signal: AbortSignal): Promise<TrainingJobResult> {
  if (signal.aborted) return Promise.reject(new TrainingAbortedError());
  return new Promise<TrainingJobResult>((resolve, reject) => {
    const worker = new Worker(workerBootstrap(), { eval: true, workerData: input });
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    let exited = false;
    const finish = (outcome: { result: TrainingJobResult } | { error: Error }) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      clearTimeout(graceTimer);
      // The worker ends by itself after its last message; a straggler is stopped a little later.
      // (Only once its llama.cpp instance is gone: see runner/tokenizer.ts.)
      if (!exited) {
        worker.postMessage({ type: "abort" } satisfies ToWorker); // stops a job still running (a throwing callback)
        setTimeout(() => void worker.terminate(), WORKER_EXIT_GRACE_MS).unref();
      }
      if ("result" in outcome) resolve(outcome.result);
      else reject(outcome.error);
    };
    const onAbort = () => {
      worker.postMessage({ type: "abort" } satisfies ToWorker);
      graceTimer = setTimeout(() => finish({ error: new TrainingAbortedError() }), ABORT_GRACE_MS);
      graceTimer.unref();
    };
    signal.addEventListener("abort", onAbort, { once: true });

    worker.on("message", (message: FromWorker) => {
      if (settled) return;
      try {
        switch (message.type) {
          case "started":
            progress.started(message.numSequences);
            break;
          case "step":
            progress.step(message.metrics);
            break;
          case "done":
            finish({ result: message.result });
            break;
          case "error": {
            const error =
              message.kind === "input" ? new TrainingInputError(message.message) : message.kind === "aborted" ? new TrainingAbortedError() : new Error(`trainer: ${message.message}`);
            if (message.kind === "internal" && message.stack) error.stack = message.stack;
            finish({ error });
            break;
          }
        }
      } catch (error) {
        // A throwing progress callback fails the job rather than the worker's message loop.
        finish({ error: error instanceof Error ? error : new Error(String(error)) });
      }
    });
    worker.on("error", (error) => finish({ error }));
    worker.on("exit", (code) => {
      exited = true;
      finish({ error: new Error(`the training worker exited (code ${code}) without a result`) });
    });
  });
}
