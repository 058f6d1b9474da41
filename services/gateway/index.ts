// The gateway's face: the transport the composition root starts, and the API keys it authenticates with.
export { serveGateway, type Gateway, type GatewayOptions } from "./serve.js";
export { ApiKeys } from "./auth/api-keys.js";
export { apiKeysHandlers } from "./auth/keys-handlers.js";
export type { HfTokenizerRepos } from "./hf-routes.js";
