// What the playground can talk to: the deployment's base models and the API key's registered
// models with their checkpoints, named the way `model` in a chat completion accepts them.
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import { models, readable } from "../api.js";
import { listAll, mapPooled } from "../lists.js";
import { checkpointName, modelTitle } from "../views/links.js";

export interface RegisteredModel {
  model: Model;
  /** Steps with a checkpoint, newest first; always ends with 0 (the base weights need no checkpoint). */
  steps: number[];
  /** More checkpoints exist than were listed (only the newest 100 are offered). */
  moreSteps: boolean;
}

export interface ModelCatalog {
  baseModels: string[];
  registered: RegisteredModel[];
  /** Readable messages of lists that failed to load (the rest of the catalog is still usable). */
  problems: string[];
}

export interface ModelOption {
  value: string;
  label: string;
}

export interface ModelGroup {
  label: string;
  options: ModelOption[];
}

/** "web/watched · latest (step 3)", "web/watched · step 0 (base weights)", "web/watched · step 2". */
export function checkpointLabel(model: Model, step: number, latest: boolean): string {
  const what = step === 0 ? "step 0, base weights" : `step ${step}`;
  if (latest) return `${modelTitle(model)} · latest (${what})`;
  return `${modelTitle(model)} · ${step === 0 ? "step 0 (base weights)" : what}`;
}

/** Base models first, then one group per registered model with its steps (newest first). */
export function catalogGroups(catalog: ModelCatalog): ModelGroup[] {
  const groups: ModelGroup[] = [];
  if (catalog.baseModels.length > 0) groups.push({ label: "Base models", options: catalog.baseModels.map((name) => ({ value: name, label: `${name} (base)` })) });
  for (const { model, steps } of catalog.registered) {
    groups.push({
      label: `${modelTitle(model)} (on ${model.baseModel})`,
      options: steps.map((step, index) => ({ value: checkpointName(model, step), label: checkpointLabel(model, step, index === 0) })),
    });
  }
  return groups;
}

/**
 * The model a comparison starts with: step 0 of the same model for a checkpoint, its latest step
 * for step 0, and for a base model the latest step of a model trained on it (else itself).
 */
export function defaultComparison(first: string, catalog: ModelCatalog): string {
  for (const { model, steps } of catalog.registered) {
    const names = steps.map((step) => checkpointName(model, step));
    if (!names.includes(first)) continue;
    return first === checkpointName(model, 0) ? (names[0] ?? first) : checkpointName(model, 0);
  }
  const step = /^(wandb-artifact:\/\/\/[^:]+):step(\d+)$/.exec(first);
  if (step) return step[2] === "0" ? first.replace(/:step0$/, ":latest") : `${step[1]}:step0`;
  const trained = catalog.registered.find(({ model }) => model.baseModel === first);
  return trained ? checkpointName(trained.model, trained.steps[0] ?? 0) : first;
}

/** Loads everything the pickers offer; a list that fails leaves a problem and an empty part. */
export async function loadCatalog(signal: AbortSignal): Promise<ModelCatalog> {
  const problems: string[] = [];
  const note = (what: string) => (error: unknown) => {
    if (!signal.aborted) problems.push(`Could not load ${what}: ${readable(error)}`);
    return null;
  };
  const [baseModels, ownModels] = await Promise.all([
    models.listBaseModels({}, { signal }).then((response) => response.models, note("the base models")),
    listAll((after) => models.listModels({ limit: 100, after }, { signal })).then(({ items }) => items, note("your models")),
  ]);
  const registered = await mapPooled(ownModels ?? [], 4, async (model): Promise<RegisteredModel> => {
    const page = await models.listCheckpoints({ modelId: model.id, order: "desc", limit: 100 }, { signal }).catch(note(`the checkpoints of ${modelTitle(model)}`));
    const steps = [...new Set([...(page?.data ?? []).map((checkpoint) => checkpoint.step), 0])].sort((a, b) => b - a);
    return { model, steps, moreSteps: page?.hasMore ?? false };
  });
  registered.sort((a, b) => modelTitle(a.model).localeCompare(modelTitle(b.model)));
  return { baseModels: baseModels ?? [], registered, problems };
}
