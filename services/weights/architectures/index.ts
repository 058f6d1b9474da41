// The architectures makeTinyModel can write, by name.
import { gemma2, gemma3 } from "./gemma.js";
import { llama, mistral } from "./llama.js";
import { phi3 } from "./phi3.js";
import { qwen2, qwen3 } from "./qwen.js";
import type { ArchitectureSpec, TinyArchitecture } from "./types.js";

export { TINY_ARCHITECTURES, type ArchitectureSpec, type ArchShape, type TinyArchitecture } from "./types.js";

export const ARCHITECTURES: Record<TinyArchitecture, ArchitectureSpec> = { llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3 };
