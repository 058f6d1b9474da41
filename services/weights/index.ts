// The weights face: GGUF reading, the built-in tiny models, the byte-level tokenizer table and a
// GGUF tokenizer as Hugging Face files, which other services use.
export { readGgufHeader } from "./gguf/index.js";
export { getNumber, getString } from "./gguf/values.js";
export { BUILT_IN_MODELS, ensureBuiltInModel, makeTinyModel, type TinyModelType } from "./tiny-model.js";
export { UNICODE_TO_BYTE } from "./tokenizer/byte-unicode.js";
export {
  HF_TOKENIZER_FILES,
  HfTokenizerFileCache,
  hfTokenizerFilesOfGguf,
  UnsupportedTokenizerError,
  type HfTokenizerFiles,
} from "./tokenizer/hf-files.js";
export {
  ADAPTER_GGUF_FILE,
  AdapterCheckError,
  adapterBaseOf,
  checkAdapterFileName,
  checkAdapterFiles,
  checkPeftFiles,
  MAX_LORA_ALPHA,
  MAX_LORA_RANK,
  PEFT_CONFIG_FILE,
  PEFT_WEIGHTS_FILE,
  type AdapterBase,
  type AdapterSummary,
} from "./adapter-check.js";
