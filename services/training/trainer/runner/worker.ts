// Entry point of the training worker thread: runs one job (workerData = TrainingJobInput) and
// relays progress. The main thread's abort arrives as a message; the job checks it between
// optimizer steps (a step blocks this thread's event loop, so it is seen right after one).
import { parentPort, workerData } from "node:worker_threads";
import { TrainingInputError, type TrainingJobInput } from "../api.js";
import { runJob } from "./job.js";
import { TrainingAbortedError } from "./progress.js";
import type { FromWorker, ToWorker } from "./protocol.js";

const port = parentPort;
if (!port) throw new Error("runner/worker.ts must run in a worker thread");
const post = (message: FromWorker) => port.postMessage(message);
const controller = new AbortController();
port.on("message", (message: ToWorker) => {
  if (message.type === "abort") controller.abort();
});

try {
  const result = await runJob(
    workerData as TrainingJobInput,
    {
      started: (numSequences) => post({ type: "started", numSequences }),
      // Events carry numbers only (JSON has no NaN/Infinity); a non-finite value is left out.
      step: (metrics) => post({ type: "step", metrics: Object.fromEntries(Object.entries(metrics).filter(([, v]) => Number.isFinite(v))) }),
    },
    controller.signal,
  );
  post({ type: "done", result });
} catch (error) {
  const kind = error instanceof TrainingInputError ? "input" : error instanceof TrainingAbortedError ? "aborted" : "internal";
  const message = error instanceof Error ? error.message : String(error);
  post({ type: "error", kind, message, stack: error instanceof Error ? error.stack : undefined });
} finally {
  port.close();
}
