// A request's `model` -> what to run: a catalog base model, plus the adapter of the checkpoint a
// registered model name points at (latest by default, read fresh on every request so a new
// checkpoint is served by the very next one). Only the caller's entity's models resolve. A Tinker
// sampler path `tinker://{training_run_id}/sampler_weights/{name}` is the checkpoint of that name
// of the caller's model whose id is the training run id.
import { badRequest, notFound } from "../../core/errors.js";
import { type AdapterFiles, type BaseModelCatalog, type BaseModelEntry, type CheckpointRecord, type Checkpoints, type ModelRecord, type ModelRegistry, parseModelName } from "../../models/index.js";

export interface ServeTarget {
  /** The caller it is served for: the engines share their sequences fairly between entities. */
  entity: string;
  base: BaseModelEntry;
  adapterPath: string | null;
  step: number | null;
  /**
   * The served adapter's SHA-256 (its GGUF blob; the engines' files are named by it): the same
   * weights under another name, as after a fork, have the same. Null for the base model's weights.
   */
  adapterSha256: string | null;
}

/** What a name points at, before any adapter file is fetched. */
export type NamedModel =
  | { kind: "base"; base: BaseModelEntry }
  | { kind: "registered"; base: BaseModelEntry; model: ModelRecord; step: "latest" }
  | { kind: "registered"; base: BaseModelEntry; model: ModelRecord; step: number; checkpoint: CheckpointRecord | null };

export class ModelResolver {
  constructor(
    private readonly deps: {
      catalog: BaseModelCatalog;
      registry: ModelRegistry;
      checkpoints: Checkpoints;
      adapters: AdapterFiles;
      /** Base models whose engine reads the whole adapter (PEFT files too), not only its GGUF. */
      wholeAdapter?: (baseName: string) => boolean;
    },
  ) {}

  /**
   * The base model or the caller's registered model a name points at (404 otherwise, in the same
   * words for absent and another entity's); a named step's checkpoint is looked up, 404 if absent
   * (step 0 may have none: it is the base model). A Tinker sampler path resolves to its named
   * checkpoint (404 if absent); a Tinker training-state path is a 400 (it is not servable).
   */
  async find(entity: string, requested: string): Promise<NamedModel> {
    const { catalog, registry, checkpoints } = this.deps;
    const name = parseModelName(requested, (n) => catalog.has(n));
    const missing = () => notFound(`The model \`${requested}\` does not exist.`);
    if (name.kind === "base") {
      const base = catalog.get(name.name);
      if (!base) throw missing();
      return { kind: "base", base };
    }
    if (name.kind === "tinker") {
      if (name.checkpointType === "training") {
        throw badRequest(`The model \`${requested}\` is a training checkpoint (save_weights / save_state): it holds training state and cannot be sampled. Save the weights with save_weights_for_sampler and use the tinker://${name.trainingRunId}/sampler_weights/... path it returns.`);
      }
      if (name.checkpointType === "external") {
        throw badRequest(`The model \`${requested}\` is an external-weights export and cannot be sampled here; use a tinker://${name.trainingRunId}/sampler_weights/... path from save_weights_for_sampler.`);
      }
      const model = await registry.get(name.trainingRunId);
      if (!model || model.entity !== entity) throw missing();
      const base = catalog.get(model.base_model);
      if (!base) throw notFound(`The base model \`${model.base_model}\` of \`${requested}\` is no longer offered by this deployment.`);
      const checkpoint = await checkpoints.byName(model._id, name.checkpointId);
      if (!checkpoint) throw notFound(`The model \`${requested}\` has no checkpoint named \`${name.checkpointId}\`.`);
      return { kind: "registered", base, model, step: checkpoint.step, checkpoint };
    }
    if (name.entity !== null && name.entity !== entity) throw missing();
    const model = await registry.findByName(entity, name.project, name.name);
    if (!model) throw missing();
    const base = catalog.get(model.base_model);
    if (!base) throw notFound(`The base model \`${model.base_model}\` of \`${requested}\` is no longer offered by this deployment.`);
    if (name.step === "latest") return { kind: "registered", base, model, step: "latest" };
    const checkpoint = await checkpoints.atStep(model._id, name.step);
    if (!checkpoint && name.step !== 0) throw notFound(`The model \`${requested}\` has no checkpoint at step ${name.step}.`);
    return { kind: "registered", base, model, step: name.step, checkpoint };
  }

  async resolve(entity: string, requested: string): Promise<ServeTarget> {
    const found = await this.find(entity, requested);
    if (found.kind === "base") return { entity, base: found.base, adapterPath: null, step: null, adapterSha256: null };
    const checkpoint = found.step === "latest" ? await this.deps.checkpoints.latest(found.model._id) : found.checkpoint;
    if (!checkpoint) return { entity, base: found.base, adapterPath: null, step: 0, adapterSha256: null };
    const adapterPath = this.deps.wholeAdapter?.(found.base.name) ? await this.deps.adapters.wholePath(checkpoint) : await this.deps.adapters.ggufPath(checkpoint);
    return { entity, base: found.base, adapterPath, step: checkpoint.step, adapterSha256: adapterPath ? checkpoint.adapter_sha256 : null };
  }
}
