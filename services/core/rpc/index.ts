// The RPC kernel: what a service's handlers need from the request pipeline, and nothing of the transport.
export { defineHandlers, type ServiceHandlers } from "./handlers.js";
export { principalKey, principalOf, type Principal } from "./principal.js";
export { rawBodyKey, restValidatedKey, sentJson } from "./sent-json.js";
export { type StagedFile, stagedFilesKey } from "./staged-files.js";
