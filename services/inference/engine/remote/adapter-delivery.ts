// Getting a checkpoint's adapter to where a replica can read it. Decision: a path, not a download
// URL: llama-server opens adapter files only from its command line, and vLLM's load_lora_adapter
// takes a local path; both read them from storage the service shares with them (adapterDir, seen
// by the replicas as replicaAdapterDir), or from this service's own DATA_DIR/adapters when they
// run on this machine. Files are copied once, under a temporary name and renamed, so a replica
// never reads half a file.
import { access, copyFile, mkdir, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { unavailable } from "../../../core/errors.js";
import { GGUF_ADAPTER_FILE } from "../../../models/index.js";
import type { AdapterRef } from "./backend.js";
import type { RemoteEngineSettings } from "../../../core/engines-config.js";

export function adapterRef(ggufPath: string): AdapterRef {
  return { key: basename(dirname(ggufPath)), ggufPath };
}

/**
 * The adapter's directory as the replica sees it, with the files this kind of server reads:
 * `gguf` (llama-server: the path of adapter.gguf) or `peft` (vLLM: the directory of
 * adapter_config.json and the weights).
 */
export async function deliverAdapter(settings: Pick<RemoteEngineSettings, "adapterDir" | "replicaAdapterDir">, adapter: AdapterRef, form: "gguf" | "peft"): Promise<string> {
  const source = dirname(adapter.ggufPath);
  if (form === "peft") {
    try {
      await access(join(source, "adapter_config.json"));
    } catch {
      throw unavailable(`adapter ${adapter.key} has no PEFT files in this service's adapter cache (${source}); a vLLM replica cannot load it`);
    }
  }
  if (!settings.adapterDir) return form === "gguf" ? adapter.ggufPath : source;
  const target = join(settings.adapterDir, adapter.key);
  const seen = join(settings.replicaAdapterDir || settings.adapterDir, adapter.key);
  const wanted = (await readdir(source)).filter((name) => (form === "gguf" ? name === GGUF_ADAPTER_FILE : name !== GGUF_ADAPTER_FILE));
  const present = new Set(await readdir(target).catch(() => [] as string[]));
  const missing = wanted.filter((name) => !present.has(name));
  if (missing.length > 0) {
    await mkdir(target, { recursive: true });
    for (const name of missing) {
      const partial = join(target, `.${name}.${process.pid}.partial`);
      try {
        await copyFile(join(source, name), partial);
        await rename(partial, join(target, name));
      } finally {
        await rm(partial, { force: true });
      }
    }
  }
  return form === "gguf" ? join(seen, GGUF_ADAPTER_FILE) : seen;
}
