// The Training service's face: job RPC handlers, the worker that claims jobs, the trainers it runs
// them on, and the adapter types other services read.
export { trainingHandlers } from "./handlers.js";
export { type DownloadSource, openCheckpointAdapter, openCheckpointArchive } from "./artifact-download.js";
export { type AdapterFileSet, type BaseModelRef, baseModelRefOf, TrainingInputError } from "./trainer/api.js";
export { DEFAULT_TRAINER_PYTHON, LocalTrainer } from "./trainer/engine/local-trainer.js";
export { TrainerPool } from "./trainer/engine/trainer-pool.js";
export { type AdamSettings, type LiveAdapterCommand, type LiveAdapterDatum, LiveAdapterExistsError, type LiveAdapterLora, LiveAdapterLostError, type LiveAdapterResult } from "./trainer/live-adapter.js";
export { trainerSettings } from "./trainer/engine/trainer-settings.js";
export { trainerFor } from "./trainer/runner/run-training-job.js";
export { TrainingWorker } from "./worker/worker.js";
