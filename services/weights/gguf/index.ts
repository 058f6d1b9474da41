// The GGUF module's public surface, so callers import one path.
export { GgufReader, readGgufHeader, type GgufHeader, type GgufTensorInfo } from "./reader.js";
export { writeGguf, elementCount, type GgufTensorSource, type WriteGgufResult } from "./writer.js";
export { gv, getNumber, getString, getStrings } from "./values.js";
export { quantizeQ8_0, dequantizeQ8_0 } from "./q8_0.js";
export { quantizeQ4_0, dequantizeQ4_0, quantizeQ4_1, dequantizeQ4_1 } from "./q4.js";
export { quantizeQ4_K, dequantizeQ4_K, quantizeQ5_K, dequantizeQ5_K } from "./k-quants.js";
export { quantizeQ6_K, dequantizeQ6_K } from "./q6_k.js";
export {
  GGML_TYPES,
  SUPPORTED_TENSOR_TYPES,
  type GgmlTypeName,
  type GgufMetadata,
  type GgufValue,
  type SupportedTensorType,
} from "./types.js";
