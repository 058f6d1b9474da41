// Artifact versions as the W&B API shows them, from two stores: the artifacts of the artifact
// store (datasets and whatever else the SDK logs), and a model's checkpoints, which are the `lora`
// artifacts of a collection named after the model (version = step; aliases `step{N}` and, on the
// newest, `latest`; files: the PEFT adapter). Nothing of another entity is ever found.
import { createHash } from "node:crypto";
import type { ArtifactRecord, Artifacts } from "../artifacts/index.js";
import type { CheckpointRecord, Checkpoints, ModelRecord, ModelRegistry } from "../models/index.js";
import type { OpenedBlob } from "../store/index.js";

export const LORA_TYPE = "lora";

export interface ViewFile {
  name: string;
  size: number;
  /** MD5, base64. */
  md5: string;
}

interface ViewBase {
  /** The GraphQL id. */
  id: string;
  entity: string;
  project: string;
  /** The collection (artifact name without version). */
  name: string;
  type: string;
  versionIndex: number;
  aliases: string[];
  metadata: string;
  description: string | null;
  createdAt: Date;
  files: ViewFile[];
  runId: string | null;
}

export type ArtifactView = ViewBase & ({ kind: "artifact"; record: ArtifactRecord } | { kind: "checkpoint"; checkpoint: CheckpointRecord; model: ModelRecord });

/** W&B's manifest digest: MD5 over a header and `path:digest` lines in path order. */
export function manifestDigest(files: readonly ViewFile[]): string {
  const hasher = createHash("md5").update("wandb-artifact-manifest-v1\n");
  for (const file of [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) hasher.update(`${file.name}:${file.md5}\n`);
  return hasher.digest("hex");
}

const encodeId = (raw: string) => Buffer.from(`Artifact:${raw}`).toString("base64");

/** The raw id behind a GraphQL artifact id (null when it is not one of ours). */
export function decodeArtifactId(id: string): string | null {
  const text = Buffer.from(id, "base64").toString("utf8");
  return text.startsWith("Artifact:") ? text.slice("Artifact:".length) : null;
}

export const artifactGraphqlId = (artifactId: string) => encodeId(artifactId);
export const checkpointGraphqlId = (checkpointId: string) => encodeId(`ckpt:${checkpointId}`);

/** A version selector after the colon: `v3`, `latest`, `step3` or any alias. */
export type Selector = string;

export class ArtifactViews {
  constructor(
    private readonly artifacts: Artifacts,
    private readonly checkpoints: Checkpoints,
    private readonly registry: ModelRegistry,
  ) {}

  /** A collection's lora checkpoints when `name` is a model of the project and the type allows it. */
  private async modelOf(entity: string, project: string, name: string, type: string | null): Promise<ModelRecord | null> {
    if (type !== null && type !== LORA_TYPE) return null;
    return this.registry.findByName(entity, project, name);
  }

  async byName(entity: string, project: string, name: string, selector: Selector, type: string | null): Promise<ArtifactView | null> {
    const model = await this.modelOf(entity, project, name, type);
    if (model) {
      const step = /^(?:v|step)(\d+)$/.exec(selector);
      const checkpoint = selector === "latest" ? await this.checkpoints.latest(model._id) : step ? await this.checkpoints.atStep(model._id, Number(step[1])) : await this.checkpointWithAlias(model, selector);
      return checkpoint && checkpoint.adapter_sha256 ? this.checkpointView(model, checkpoint, selector === "latest" ? checkpoint._id : undefined) : null;
    }
    const version = /^v(\d+)$/.exec(selector);
    const record = version ? await this.artifacts.find(entity, project, name, Number(version[1])) : await this.artifacts.findByAlias(entity, project, name, selector);
    if (!record || (type !== null && record.type !== type)) return null;
    return this.artifactView(record, selector === "latest" ? record._id : undefined);
  }

  async byId(entity: string, id: string): Promise<ArtifactView | null> {
    const raw = decodeArtifactId(id);
    if (raw === null) return null;
    if (raw.startsWith("ckpt:")) {
      const checkpoint = await this.checkpoints.byId(raw.slice("ckpt:".length));
      const model = checkpoint ? await this.registry.get(checkpoint.model_id) : null;
      return checkpoint && model && model.entity === entity && checkpoint.adapter_sha256 ? this.checkpointView(model, checkpoint) : null;
    }
    const record = await this.artifacts.findById(raw);
    return record && record.entity === entity ? this.artifactView(record) : null;
  }

  /** Every version of a collection, oldest first. */
  async versions(entity: string, project: string, name: string, type: string | null): Promise<ArtifactView[]> {
    const model = await this.modelOf(entity, project, name, type);
    if (model) {
      const views: ArtifactView[] = [];
      const latestId = (await this.checkpoints.latest(model._id))?._id ?? null;
      let after: string | undefined;
      for (;;) {
        const page = await this.checkpoints.list(model._id, { after, limit: 100, order: "asc" });
        for (const checkpoint of page.items) if (checkpoint.adapter_sha256) views.push(await this.checkpointView(model, checkpoint, latestId));
        if (!page.hasMore || page.items.length === 0) break;
        after = page.items[page.items.length - 1]?._id;
      }
      return views;
    }
    const records = await this.artifacts.versions(entity, project, name);
    const latestId = records.at(-1)?._id ?? null;
    return Promise.all(records.filter((r) => type === null || r.type === type).map((r) => this.artifactView(r, latestId)));
  }

  async collectionType(entity: string, project: string, name: string): Promise<string | null> {
    if (await this.registry.findByName(entity, project, name)) return LORA_TYPE;
    return (await this.artifacts.find(entity, project, name, null))?.type ?? null;
  }

  /** One file's bytes as they come from the blob store. */
  async openFile(view: ArtifactView, name: string): Promise<OpenedBlob | null> {
    if (view.kind === "checkpoint") return name === "adapter.gguf" ? null : this.checkpoints.openAdapterFile(view.checkpoint, name);
    return this.artifacts.openFile(view.record, name);
  }

  /** The blob a file of a version is stored as (its content hash), or null: download URLs are bound to it. */
  blobOf(view: ArtifactView, name: string): string | null {
    if (view.kind === "checkpoint") return name === "adapter.gguf" ? null : this.checkpoints.adapterBlobName(view.checkpoint, name);
    return view.record.files.find((file) => file.name === name)?.sha256 ?? null;
  }

  /** Saves metadata, description and aliases (each when given), as `artifact.save()` does. */
  async update(view: ArtifactView, changes: { metadata?: string; description?: string | null; aliases?: string[] }): Promise<ArtifactView> {
    if (view.kind === "artifact") return this.artifactView(await this.artifacts.update(view.record, changes));
    const own = changes.aliases?.filter((alias) => alias !== "latest" && !/^(?:v|step)\d+$/.test(alias));
    await this.checkpoints.setArtifactFields(view.checkpoint._id, { metadata: changes.metadata, aliases: own });
    const checkpoint = await this.checkpoints.byId(view.checkpoint._id);
    if (!checkpoint) return view;
    return this.checkpointView(view.model, checkpoint);
  }

  private async checkpointWithAlias(model: ModelRecord, alias: string): Promise<CheckpointRecord | null> {
    for (const view of await this.versions(model.entity, model.project, model.name, LORA_TYPE)) if (view.aliases.includes(alias) && view.kind === "checkpoint") return view.checkpoint;
    return null;
  }

  /** latestId: the newest checkpoint's id when the caller has it (a listing), else looked up. */
  private async checkpointView(model: ModelRecord, checkpoint: CheckpointRecord, latestId?: string | null): Promise<ArtifactView> {
    const latest = latestId !== undefined ? latestId : ((await this.checkpoints.latest(model._id))?._id ?? null);
    const names = this.checkpoints.adapterFileNames(checkpoint).filter((name) => name !== "adapter.gguf");
    let files: ViewFile[] = checkpoint.peft_md5 ?? [];
    if (names.some((name) => !files.some((file) => file.name === name && file.size !== undefined))) {
      files = await Promise.all(names.map(async (name) => ({ name, ...(await digestOf(await this.checkpoints.openAdapterFile(checkpoint, name))) })));
      await this.checkpoints.setArtifactFields(checkpoint._id, { peftMd5: files });
    }
    return {
      kind: "checkpoint",
      checkpoint,
      model,
      id: checkpointGraphqlId(checkpoint._id),
      entity: model.entity,
      project: model.project,
      name: model.name,
      type: LORA_TYPE,
      versionIndex: checkpoint.step,
      aliases: [...new Set([`step${checkpoint.step}`, ...(checkpoint.artifact_aliases ?? []), ...(latest === checkpoint._id ? ["latest"] : [])])],
      metadata: checkpoint.artifact_metadata ?? "{}",
      description: null,
      createdAt: checkpoint.created_at,
      files,
      runId: model.run_id,
    };
  }

  /** A version of the artifact store as a view; latestId as for checkpointView. */
  async artifactView(record: ArtifactRecord, latestId?: string | null): Promise<ArtifactView> {
    const latest = latestId !== undefined ? latestId : ((await this.artifacts.find(record.entity, record.project, record.name, null))?._id ?? null);
    const files = await Promise.all(
      record.files.map(async (file) => ({ name: file.name, size: file.size, md5: file.md5 ?? (await digestOf(await this.artifacts.openFile(record, file.name))).md5 })),
    );
    return {
      kind: "artifact",
      record,
      id: artifactGraphqlId(record._id),
      entity: record.entity,
      project: record.project,
      name: record.name,
      type: record.type,
      versionIndex: record.version,
      aliases: [...new Set([...(record.aliases ?? []).filter((alias) => alias !== "latest"), ...(latest === record._id ? ["latest"] : [])])],
      metadata: record.metadata ?? "{}",
      description: record.description ?? null,
      createdAt: record.created_at,
      files,
      runId: record.run_id ?? null,
    };
  }
}

/** Size and MD5 (base64) of a stored file, read through once. */
async function digestOf(file: OpenedBlob | null): Promise<{ size: number; md5: string }> {
  const hasher = createHash("md5");
  let size = 0;
  if (file) {
    for await (const chunk of file.stream as AsyncIterable<Buffer>) {
      hasher.update(chunk);
      size += chunk.length;
    }
  }
  return { size, md5: hasher.digest("base64") };
}
