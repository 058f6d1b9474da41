// The W&B API subset's face: the API object the gateway routes to and the stores the composition
// root builds it from.
export { WandbApi } from "./api.js";
export { FieldTooLarge } from "./field-limits.js";
export { ArtifactUploads } from "./artifact-uploads.js";
export { ArtifactViews } from "./artifact-views.js";
export { loraImporter } from "./lora-import.js";
export { WandbRunStates } from "./run-state.js";
export { WandbRuns } from "./wandb-runs.js";
