// Messages between the main thread and the preparation thread (../index.ts, ./worker.ts).
import type { TrainingJobInput } from "../api.js";
import type { PrepareContext } from "./prepare.js";
import type { PreparedJob } from "./prepared-job.js";

export interface ToWorker {
  input: TrainingJobInput;
  context: PrepareContext;
}

export type FromWorker = { type: "prepared"; job: PreparedJob } | { type: "error"; message: string; kind: "input" | "internal"; stack?: string };
