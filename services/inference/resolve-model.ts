// A request's `model` -> what to run: a catalog base model, plus the adapter of the checkpoint a
// registered model name points at (latest by default, read fresh on every request so a new
// checkpoint is served by the very next one). Only the caller's entity's models resolve.
import { notFound } from "../core/errors.js";
import type { BaseModelCatalog, BaseModelEntry } from "../models/catalog.js";
import type { Checkpoints } from "../models/checkpoints.js";
import type { ModelRegistry } from "../models/registry.js";
import type { AdapterFiles } from "../models/adapter-files.js";
import { parseModelName } from "./model-names.js";

export interface ServeTarget {
  base: BaseModelEntry;
  adapterPath: string | null;
  step: number | null;
}

export class ModelResolver {
  constructor(
    private readonly deps: { catalog: BaseModelCatalog; registry: ModelRegistry; checkpoints: Checkpoints; adapters: AdapterFiles },
  ) {}

  async resolve(entity: string, requested: string): Promise<ServeTarget> {
    const { catalog, registry, checkpoints, adapters } = this.deps;
    const name = parseModelName(requested, (n) => catalog.has(n));
    const missing = () => notFound(`The model \`${requested}\` does not exist.`);
    if (name.kind === "base") {
      const base = catalog.get(name.name);
      if (!base) throw missing();
      return { base, adapterPath: null, step: null };
    }
    if (name.entity !== null && name.entity !== entity) throw missing();
    const model = await registry.findByName(entity, name.project, name.name);
    if (!model) throw missing();
    const base = catalog.get(model.base_model);
    if (!base) throw notFound(`The base model \`${model.base_model}\` of \`${requested}\` is no longer offered by this deployment.`);
    const checkpoint = name.step === "latest" ? await checkpoints.latest(model._id) : await checkpoints.atStep(model._id, name.step);
    if (!checkpoint) {
      if (name.step === "latest" || name.step === 0) return { base, adapterPath: null, step: 0 };
      throw notFound(`The model \`${requested}\` has no checkpoint at step ${name.step}.`);
    }
    const adapterPath = await adapters.ggufPath(checkpoint);
    return { base, adapterPath, step: checkpoint.step };
  }
}
