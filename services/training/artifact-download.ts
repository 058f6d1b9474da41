// What DownloadArtifactFile serves: a file of an uploaded artifact, or the LoRA adapter of a model
// checkpoint (the service's own "lora" artifacts: `{name}:step{N}`, as ART names them) as
// llama.cpp's GGUF, one PEFT file, or PEFT's two files as a tar archive. Names follow the
// model-name rules; only the caller's entity's resolve, anything else is absent (404).
import { pack } from "tar-stream";
import { badRequest, notFound } from "../core/errors.js";
import type { Artifacts } from "../artifacts/index.js";
import { type CheckpointRecord, type Checkpoints, GGUF_ADAPTER_FILE, type ModelRegistry, parseModelName } from "../models/index.js";
import { parseArtifactUrl } from "./artifact-url.js";

export interface DownloadSource {
  filename: string;
  contentType: string;
  size: number;
  chunks: AsyncIterable<Buffer>;
}

export async function openDownload(
  deps: { artifacts: Artifacts; registry: ModelRegistry; checkpoints: Checkpoints },
  entity: string,
  url: string,
  filename: string | null,
  format: string | null = null,
): Promise<DownloadSource> {
  const name = parseModelName(url, () => false);
  if (name.kind !== "registered") throw badRequest(`url "${url}" names neither a checkpoint ({project}/{name}:step{N}) nor an artifact (wandb-artifact:///{entity}/{project}/{name}:v{N})`);
  if (name.entity !== null && name.entity !== entity) throw notFound(`${url} not found`);
  const model = await deps.registry.findByName(entity, name.project, name.name);
  if (model) {
    const checkpoint = name.step === "latest" ? await deps.checkpoints.latest(model._id) : await deps.checkpoints.atStep(model._id, name.step);
    if (!checkpoint) throw notFound(`${name.project}/${name.name} has no checkpoint at step ${String(name.step)}`);
    return openCheckpointAdapter(deps.checkpoints, checkpoint, `${model.name}-step${checkpoint.step}`, filename, format, `step ${checkpoint.step} of ${name.project}/${name.name} is the base model ${model.base_model} itself: it has no adapter`);
  }
  if (format !== null) throw badRequest("format applies to checkpoints only; an artifact's files download as they were uploaded");
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
  return { filename: chosen, contentType: contentTypeOf(chosen), size: file.size, chunks: file.stream };
}

/** A checkpoint's adapter as one download: a file by name (default the GGUF), or PEFT's two files as a tar (`format: "peft"`). */
export async function openCheckpointAdapter(checkpoints: Checkpoints, checkpoint: CheckpointRecord, stem: string, filename: string | null, format: string | null, noAdapterMessage: string): Promise<DownloadSource> {
  if (format !== null && filename !== null) throw badRequest("give filename or format, not both");
  if (format !== null && format !== "gguf" && format !== "peft") throw badRequest(`format must be "gguf" or "peft", got ${JSON.stringify(format)}`);
  const names = checkpoints.adapterFileNames(checkpoint);
  if (names.length === 0) throw notFound(noAdapterMessage);
  const peftNames = names.filter((n) => n !== GGUF_ADAPTER_FILE);
  if (format === "peft") {
    if (peftNames.length === 0) throw notFound(`step ${checkpoint.step} was trained before adapters were also written in PEFT's format; only ${GGUF_ADAPTER_FILE} exists`);
    return peftArchive(checkpoints, checkpoint, `${stem}-peft.tar`, peftNames);
  }
  const chosen = filename ?? GGUF_ADAPTER_FILE;
  const file = names.includes(chosen) ? await checkpoints.openAdapterFile(checkpoint, chosen) : null;
  if (!file) throw notFound(`step ${checkpoint.step} has no file ${chosen} (files: ${names.join(", ")})`);
  return { filename: chosen === GGUF_ADAPTER_FILE ? `${stem}.gguf` : chosen, contentType: contentTypeOf(chosen), size: file.size, chunks: file.stream };
}

/** Every file of a checkpoint's adapter (the GGUF and PEFT's) as one tar, `${stem}.tar`. */
export async function openCheckpointArchive(checkpoints: Checkpoints, checkpoint: CheckpointRecord, stem: string, noAdapterMessage: string): Promise<DownloadSource> {
  const names = checkpoints.adapterFileNames(checkpoint);
  if (names.length === 0) throw notFound(noAdapterMessage);
  return peftArchive(checkpoints, checkpoint, `${stem}.tar`, names);
}

/** Adapter files as one uncompressed tar (safetensors barely compress), streamed as it is read. */
async function peftArchive(checkpoints: Checkpoints, checkpoint: CheckpointRecord, filename: string, names: readonly string[]): Promise<DownloadSource> {
  const files = await Promise.all(
    names.map(async (name) => {
      const file = await checkpoints.openAdapterFile(checkpoint, name);
      if (!file) throw new Error(`step ${checkpoint.step} lost its adapter file ${name} from the blob store`);
      return { name, file };
    }),
  );
  const archive = pack();
  const mtime = checkpoint.created_at;
  // ustar: a 512-byte header per file, data padded to 512, two zero blocks at the end.
  const size = files.reduce((n, { file }) => n + 512 + Math.ceil(file.size / 512) * 512, 0) + 1024;
  void (async () => {
    try {
      for (const { name, file } of files) {
        const entry = archive.entry({ name, size: file.size, mode: 0o644, mtime });
        for await (const chunk of file.stream as AsyncIterable<Buffer>) {
          if (!entry.write(chunk)) await new Promise<void>((resolve) => entry.once("drain", () => resolve()));
        }
        await new Promise<void>((resolve, reject) => entry.end((error?: Error | null) => (error ? reject(error) : resolve())));
      }
      archive.finalize();
    } catch (error) {
      archive.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  })();
  return { filename, contentType: "application/x-tar", size, chunks: archive as AsyncIterable<Buffer> };
}

function contentTypeOf(filename: string): string {
  if (filename.endsWith(".jsonl")) return "application/jsonl";
  if (filename.endsWith(".json")) return "application/json";
  if (filename.endsWith(".txt")) return "text/plain; charset=utf-8";
  return "application/octet-stream";
}
