// The engine's answer to `describe`: a base model's context per sequence, read from its GGUF's
// metadata without loading the weights (listing models must stay cheap), and shared with
// generation through ContextSizes so both always give the same number.
import { GgufInsights, readGgufFileInfo, type Llama } from "node-llama-cpp";
import type { BaseModelRef } from "../protocol.js";
import type { ContextSizes } from "./context-size.js";
import { localModelPath } from "./model-source.js";

/** Null when the model's file is not here (an hf: model not downloaded yet). */
export async function describeBaseModel(base: BaseModelRef, options: { sizes: ContextSizes; dataDir: string; llama: () => Promise<Llama> }): Promise<number | null> {
  const known = options.sizes.known(base.name);
  if (known) return known;
  const path = await localModelPath(base.source, options.dataDir);
  if (path === null) return null;
  const info = await readGgufFileInfo(path, { sourceType: "filesystem", logWarnings: false });
  return options.sizes.of(base.name, await GgufInsights.from(info, await options.llama()));
}
