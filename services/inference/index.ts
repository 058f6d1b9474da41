// The Inference service's face: what the rest of the code base uses of it. Files outside
// services/inference import from here, not from the files behind it.

// The service's RPC handlers and the model resolution the composition root wires into them.
export { inferenceHandlers } from "./handlers.js";
export { ModelResolver } from "./generation/resolve-model.js";

// The engine: clients of the engine process, remote engines, and the engine protocol's types.
export { EngineClient } from "./engine/client.js";
export { EngineSet } from "./engine/inference-engine.js";
export { buildRemoteEngines } from "./engine/remote/build.js";
export type { BaseModelRef, EngineSettings, GenerateRequest } from "./engine/protocol.js";

// llama.cpp: binaries, models, prompts and threads (training renders prompts as sampling does).
export { describeBinary, loadLlama, type LlamaBinary } from "./engine/llama/binary.js";
export { installedLlamaServer, prebuiltIsSafeFallback, readBinariesReport } from "./engine/llama-binaries.js";
export { chatTemplateOf, vocabTokens } from "./engine/llama/model-info.js";
export { modelPath } from "./engine/llama/model-source.js";
export { buildPrompt } from "./engine/llama/prompt.js";
export { threadsFor } from "./engine/llama/threads.js";
