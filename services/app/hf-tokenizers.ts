// The base models whose tokenizers the gateway's /hf endpoint serves: every catalog entry, with
// the Hugging Face files written from the very GGUF the engine loads for it (the same modelPath),
// made once per model file.
import type { Config } from "../core/config.js";
import type { HfTokenizerRepos } from "../gateway/index.js";
import { modelPath } from "../inference/index.js";
import type { BaseModelCatalog } from "../models/index.js";
import { HfTokenizerFileCache } from "../weights/index.js";

export function hfTokenizerRepos(catalog: BaseModelCatalog, config: Pick<Config, "dataDir" | "engineHubTimeoutMs">): HfTokenizerRepos {
  const cache = new HfTokenizerFileCache();
  // An `hf:` model not downloaded yet is fetched as the engine's first request for it would fetch
  // it, once however many clients ask at the same time; its path is then kept (one from_pretrained
  // makes several requests), and forgotten if finding it failed, so a later request tries again.
  const paths = new Map<string, Promise<string>>();
  const pathOf = (source: string): Promise<string> => {
    let path = paths.get(source);
    if (!path) {
      path = modelPath(source, config.dataDir, config.engineHubTimeoutMs).catch((error: unknown) => {
        paths.delete(source);
        throw error;
      });
      paths.set(source, path);
    }
    return path;
  };
  return {
    has: (name) => catalog.has(name),
    async files(name) {
      const entry = catalog.get(name);
      if (!entry) throw new Error(`unknown base model ${name}`);
      return cache.get(await pathOf(entry.source));
    },
  };
}
