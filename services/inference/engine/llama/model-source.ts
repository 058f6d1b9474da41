// Where a base model's GGUF comes from: a built-in tiny model (written under DATA_DIR on first
// use), a local path, or an `hf:` reference resolved by node-llama-cpp (downloads into
// DATA_DIR/models; with no network it fails with a clear message instead of hanging).
import { join } from "node:path";
import { access } from "node:fs/promises";
import { resolveModelFile } from "node-llama-cpp";
import { ensureBuiltInModel } from "../../../weights/index.js";
import { EngineRequestError } from "./errors.js";

export async function modelPath(source: string, dataDir: string, hubTimeoutMs: number): Promise<string> {
  if (source.startsWith("builtin:")) return ensureBuiltInModel(source.slice("builtin:".length) as "tiny-chat", dataDir);
  if (source.startsWith("hf:")) {
    try {
      // node-llama-cpp's resolver does not give up by itself where connections hang (no network),
      // so the wait is bounded here.
      const signal = AbortSignal.timeout(hubTimeoutMs);
      const timedOut = new Promise<never>((_, reject) =>
        signal.addEventListener("abort", () => reject(new Error(`no answer within ${hubTimeoutMs / 1000} s`)), { once: true }),
      );
      return await Promise.race([resolveModelFile(source, { directory: join(dataDir, "models"), cli: false, signal }), timedOut]);
    } catch (error) {
      throw new EngineRequestError("unavailable", `could not fetch ${source} from the model hub (${error instanceof Error ? error.message : String(error)}); download the .gguf and configure its path instead`);
    }
  }
  try {
    await access(source);
  } catch {
    throw new EngineRequestError("unavailable", `base model file ${source} does not exist`);
  }
  return source;
}

/**
 * The model's file if it is already here, else null; never downloads (describing a model must not
 * start a multi-GB download). A built-in model is written locally, which is cheap.
 */
export async function localModelPath(source: string, dataDir: string): Promise<string | null> {
  if (source.startsWith("builtin:")) return ensureBuiltInModel(source.slice("builtin:".length) as "tiny-chat", dataDir);
  try {
    if (source.startsWith("hf:")) return await resolveModelFile(source, { directory: join(dataDir, "models"), cli: false, download: false });
    await access(source);
    return source;
  } catch {
    return null;
  }
}
