// Messages between runTrainingJob (main thread) and the training worker thread.
import type { TrainingJobResult } from "../api.js";

export type ToWorker = { type: "abort" };

export type FromWorker =
  | { type: "started"; numSequences: number }
  | { type: "step"; metrics: Record<string, number> }
  | { type: "done"; result: TrainingJobResult }
  | { type: "error"; message: string; kind: "input" | "aborted" | "internal"; stack?: string };
