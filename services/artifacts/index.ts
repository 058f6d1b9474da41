// The artifact store's face: named, versioned sets of files in the blob store.
export { type ArtifactFile, type ArtifactRecord, Artifacts } from "./store.js";
export { artifactsHandlers } from "./handlers.js";
