// What DownloadArtifactFile serves: a file of an uploaded artifact, or the LoRA adapter of a model
// checkpoint (the service's own "lora" artifacts: `{name}:step{N}`, as ART names them). Names
// follow the model-name rules; only the caller's entity's resolve, anything else is absent (404).
import { badRequest, notFound } from "../core/errors.js";
import type { Artifacts } from "../artifacts/store.js";
import { parseModelName } from "../inference/model-names.js";
import type { Checkpoints } from "../models/checkpoints.js";
import type { ModelRegistry } from "../models/registry.js";
import { parseArtifactUrl } from "./artifact-url.js";

export interface DownloadSource {
  filename: string;
  contentType: string;
  size: number;
  chunks: AsyncIterable<Buffer>;
}

const ADAPTER_FILE = "adapter.gguf";

export async function openDownload(
  deps: { artifacts: Artifacts; registry: ModelRegistry; checkpoints: Checkpoints },
  entity: string,
  url: string,
  filename: string | null,
): Promise<DownloadSource> {
  const name = parseModelName(url, () => false);
  if (name.kind !== "registered") throw badRequest(`url "${url}" names neither a checkpoint ({project}/{name}:step{N}) nor an artifact (wandb-artifact:///{entity}/{project}/{name}:v{N})`);
  if (name.entity !== null && name.entity !== entity) throw notFound(`${url} not found`);
  const model = await deps.registry.findByName(entity, name.project, name.name);
  if (model) {
    const checkpoint = name.step === "latest" ? await deps.checkpoints.latest(model._id) : await deps.checkpoints.atStep(model._id, name.step);
    if (!checkpoint) throw notFound(`${name.project}/${name.name} has no checkpoint at step ${String(name.step)}`);
    if (filename !== null && filename !== ADAPTER_FILE) throw notFound(`a checkpoint holds one file, ${ADAPTER_FILE}; not ${filename}`);
    const adapter = await deps.checkpoints.openAdapter(checkpoint);
    if (!adapter) throw notFound(`step ${checkpoint.step} of ${name.project}/${name.name} is the base model ${model.base_model} itself: it has no adapter`);
    return { filename: `${model.name}-step${checkpoint.step}.gguf`, contentType: "application/octet-stream", ...adapter };
  }
  // No such model: an uploaded artifact, named by version (`:v{N}`, `:latest` or nothing).
  if (!url.startsWith("wandb-artifact:") || (typeof name.step === "number" && !/:v\d+$/.test(url))) throw notFound(`${url} not found`);
  const ref = parseArtifactUrl(url);
  if ("https" in ref) throw notFound(`${url} not found`);
  const record = await deps.artifacts.find(entity, ref.project, ref.name, ref.version);
  if (!record) throw notFound(`${url} not found`);
  const names = record.files.map((f) => f.name);
  const chosen = filename ?? (names.length === 1 ? names[0]! : null);
  if (chosen === null) throw badRequest(`${ref.name}:v${record.version} has several files (${names.join(", ")}): give filename`);
  const file = await deps.artifacts.openFile(record, chosen);
  if (!file) throw notFound(`${ref.name}:v${record.version} has no file ${chosen} (files: ${names.join(", ")})`);
  return { filename: chosen, contentType: contentTypeOf(chosen), ...file };
}

function contentTypeOf(filename: string): string {
  if (filename.endsWith(".jsonl")) return "application/jsonl";
  if (filename.endsWith(".json")) return "application/json";
  if (filename.endsWith(".txt")) return "text/plain; charset=utf-8";
  return "application/octet-stream";
}
