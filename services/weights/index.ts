// The weights face: GGUF reading, the built-in tiny models and the byte-level tokenizer table that
// other services use.
export { readGgufHeader } from "./gguf/index.js";
export { getNumber, getString } from "./gguf/values.js";
export { BUILT_IN_MODELS, ensureBuiltInModel, makeTinyModel, type TinyModelType } from "./tiny-model.js";
export { UNICODE_TO_BYTE } from "./tokenizer/byte-unicode.js";
