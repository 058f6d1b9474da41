// The Inference service's face: what the rest of the code base uses of it. Files outside
// services/inference import from here, not from the files behind it.

// The service's RPC handlers and the model resolution the composition root wires into them.
export { inferenceHandlers } from "./handlers.js";
// OpenAI's Responses API, a service of its own over the chat endpoint, with its stored responses.
export { responsesHandlers } from "./responses/handlers.js";
export { StoredResponses } from "./responses/stored-responses.js";
// Anthropic's Messages API, a service of its own over the chat endpoint.
export { messagesHandlers } from "./messages/handlers.js";
export { ModelResolver, type ServeTarget } from "./generation/resolve-model.js";
// The chat endpoint in-process, for services that generate on a caller's behalf (services/evaluations).
export { ChatCompletions } from "./chat/chat-completions.js";
export type { EndpointCall } from "./generation/endpoint-call.js";
// vLLM's tokenizer endpoints, on the embedded engine's vocabularies.
export { tokenizerHandlers } from "./tokenizer/handlers.js";

// Token-level generation for other services (Tinker's sampling, services/tinker/sampling): a plan
// of the engine's own request shape, run through the same engines, admission and limits as the
// OpenAI routes; the prompt's size is checked as a legacy completion's token-id prompt is.
export type { EngineEvent, InferenceEngine } from "./engine/inference-engine.js";
export type { GenerateRequest, PromptLogprobOut, TokenLogprobOut } from "./engine/protocol.js";
export { checkPromptBytes, type RequestLimits } from "./generation/request-bounds.js";
export { foldSeed } from "./generation/shared-plan.js";
export { TOKEN_ID_BYTES } from "./completions/request-checks.js";

// The engine: the engine process's client, remote engines, and the set the handlers generate on.
export { EngineClient } from "./engine/client.js";
export { EngineSet } from "./engine/inference-engine.js";
export { buildRemoteEngines } from "./engine/remote/build.js";
export { engineScrapeSource } from "./engine/engine-metrics.js";

// llama.cpp: where a base model's GGUF is, and its vocabulary and chat template (training
// tokenizes with the engine's own).
export { chatTemplateOf, textPromptTokens, vocabTokens } from "./engine/llama/model-info.js";
export { modelPath } from "./engine/llama/model-source.js";
