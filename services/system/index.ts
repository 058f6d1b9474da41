// The system face: the deployment's health, system check and current-entity RPCs.
export { systemHandlers, type SystemDeps } from "./handlers.js";
export { systemScrapeSource } from "./metrics.js";
