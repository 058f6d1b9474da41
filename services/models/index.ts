// The Models service's face: the registry of models, the base-model catalog and what it can train,
// checkpoints and their adapter files, tracking runs, trajectory logs, model deletion, RPC handlers.
export { AdapterFiles } from "./adapter-files.js";
export { BaseModelCatalog, type BaseModelEntry } from "./catalog.js";
export { type AdapterBytes, type CheckpointRecord, Checkpoints, GGUF_ADAPTER_FILE } from "./checkpoints.js";
export { ModelDeletion, type ModelDependent } from "./delete-model.js";
export { modelsHandlers } from "./handlers.js";
export { type ModelRecord, ModelRegistry } from "./registry.js";
export { type RunRecord, Runs } from "./runs.js";
export { Trainability } from "./trainability.js";
export { TrajectoryLog } from "./trajectory-log.js";
export { parseModelName, parseTinkerPath, TINKER_SEGMENT_OF_TYPE, type ModelName, type TinkerCheckpointType } from "./model-names.js";
