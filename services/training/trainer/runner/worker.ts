// Entry point of the preparation thread: tokenizes and plans one job (workerData = ToWorker) off
// the server's event loop, and posts the prepared job back.
import { parentPort, workerData } from "node:worker_threads";
import { TrainingInputError } from "../api.js";
import { prepareJob } from "./prepare.js";
import type { FromWorker, ToWorker } from "./protocol.js";

const port = parentPort;
if (!port) throw new Error("runner/worker.ts must run in a worker thread");
const post = (message: FromWorker) => port.postMessage(message);

try {
  const { input, context } = workerData as ToWorker;
  post({ type: "prepared", job: await prepareJob(input, context) });
} catch (error) {
  const kind = error instanceof TrainingInputError ? "input" : "internal";
  post({ type: "error", kind, message: error instanceof Error ? error.message : String(error), stack: error instanceof Error ? error.stack : undefined });
} finally {
  port.close();
}
