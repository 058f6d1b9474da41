// `GET /v1/models` and `GET /v1/models/{model}`: the names `model` accepts, in OpenAI's shape with
// vLLM's `root`, `parent` and `max_model_len`. Base models of the catalog, then the caller's
// registered models (their latest checkpoint) and, when asked, each of their steps. Only the
// caller's entity's models are listed or found, as completions resolve them.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServedModelSchema } from "../../../gen/srl/v1/served_models_pb.js";
import { type BaseModelCatalog, type BaseModelEntry, type CheckpointRecord, type Checkpoints, type ModelRecord, type ModelRegistry, parseTinkerPath } from "../../models/index.js";
import type { InferenceEngine } from "../engine/inference-engine.js";
import type { ModelResolver } from "../generation/resolve-model.js";

type ServedModel = MessageInitShape<typeof ServedModelSchema>;

/** Who owns the base models in listings (OpenAI writes "system", vLLM "vllm"). */
const SERVICE_OWNER = "srl";
/** A listing reads the caller's models a page at a time. */
const PAGE = 200;

export class ServedModels {
  /** Base models have no creation time of their own: they are listed as of this process's start. */
  private readonly startedAt = BigInt(Math.floor(Date.now() / 1000));

  constructor(private readonly deps: { catalog: BaseModelCatalog; registry: ModelRegistry; checkpoints: Checkpoints; engine: InferenceEngine; resolver: ModelResolver }) {}

  async list(entity: string, includeSteps: boolean): Promise<ServedModel[]> {
    const { catalog, registry, checkpoints } = this.deps;
    const lengths = new Map<string, number | null>();
    const maxLen = async (base: string) => {
      if (!lengths.has(base)) lengths.set(base, await this.maxModelLen(catalog.get(base)));
      return lengths.get(base) ?? null;
    };
    const out: ServedModel[] = [];
    for (const name of catalog.names()) out.push(this.baseEntry(catalog.get(name) as BaseModelEntry, await maxLen(name)));
    for (let after: string | undefined, more = true; more; ) {
      const page = await registry.list(entity, { limit: PAGE, ...(after ? { after } : {}) });
      for (const model of page.items) {
        const len = await maxLen(model.base_model);
        out.push(this.modelEntry(model, len));
        if (includeSteps) {
          for (let stepAfter: string | undefined, moreSteps = true; moreSteps; ) {
            const steps = await checkpoints.list(model._id, { limit: PAGE, order: "asc", ...(stepAfter ? { after: stepAfter } : {}) });
            for (const checkpoint of steps.items) out.push(this.stepEntry(model, checkpoint, len));
            moreSteps = steps.hasMore;
            stepAfter = steps.items.at(-1)?._id;
          }
        }
      }
      more = page.hasMore;
      after = page.items.at(-1)?._id;
    }
    return out;
  }

  /** One model by any name completions accept; 404 in the same words as a completion would give. */
  async get(entity: string, requested: string): Promise<ServedModel> {
    const found = await this.deps.resolver.find(entity, requested);
    const len = await this.maxModelLen(found.base);
    if (found.kind === "base") return this.baseEntry(found.base, len);
    // Step 0 without a checkpoint of its own (the base model) is listed as the model itself.
    if (found.step === "latest" || !found.checkpoint) return this.modelEntry(found.model, len);
    const entry = this.stepEntry(found.model, found.checkpoint, len);
    // A Tinker sampler path is answered under that path (what the caller named).
    return parseTinkerPath(requested.trim()) ? { ...entry, id: requested.trim() } : entry;
  }

  private async maxModelLen(base: BaseModelEntry | undefined): Promise<number | null> {
    if (!base) return null;
    const { maxModelLen } = await this.deps.engine.describeModel({ name: base.name, source: base.source, scheduling: base.scheduling });
    return maxModelLen;
  }

  private baseEntry(base: BaseModelEntry, maxModelLen: number | null): ServedModel {
    return { id: base.name, object: "model", created: this.startedAt, ownedBy: SERVICE_OWNER, root: base.name, ...(maxModelLen !== null ? { maxModelLen } : {}) };
  }

  private modelEntry(model: ModelRecord, maxModelLen: number | null): ServedModel {
    return {
      id: modelId(model),
      object: "model",
      created: BigInt(Math.floor(model.created_at.getTime() / 1000)),
      ownedBy: model.entity,
      root: model.base_model,
      parent: model.base_model,
      ...(maxModelLen !== null ? { maxModelLen } : {}),
    };
  }

  private stepEntry(model: ModelRecord, checkpoint: CheckpointRecord, maxModelLen: number | null): ServedModel {
    return {
      ...this.modelEntry(model, maxModelLen),
      id: `${modelId(model)}:step${checkpoint.step}`,
      created: BigInt(Math.floor(checkpoint.created_at.getTime() / 1000)),
      parent: modelId(model),
    };
  }
}

/** The name ART and the service's own responses use for a registered model. */
function modelId(model: ModelRecord): string {
  return `wandb-artifact:///${model.entity}/${model.project}/${model.name}`;
}
