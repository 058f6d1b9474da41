// Registered models: unique per (entity, project, name), owned by the entity of the key that made
// them. Another entity's model is reported as absent.
import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db } from "mongodb";
import { ApiError, badRequest, conflict, notFound } from "../core/errors.js";
import type { BaseModelCatalog } from "./catalog.js";
import type { Checkpoints } from "./checkpoints.js";
import { Runs } from "./runs.js";
import { paginate, type Page } from "../store/index.js";

export interface ModelRecord {
  _id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
  run_id: string;
  created_at: Date;
}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export class ModelRegistry {
  private readonly models: Collection<ModelRecord>;

  constructor(
    db: Db,
    private readonly catalog: BaseModelCatalog,
    private readonly runs: Runs,
    private readonly checkpoints: Checkpoints,
  ) {
    this.models = db.collection<ModelRecord>("models");
  }

  async ensureIndexes(): Promise<void> {
    await this.models.createIndex({ entity: 1, project: 1, name: 1 }, { unique: true });
    await this.models.createIndex({ entity: 1, created_at: -1, _id: -1 });
  }

  /** The entity's models, newest first. */
  async list(entity: string, options: { after?: string; limit: number; project?: string }): Promise<Page<ModelRecord>> {
    return paginate(this.models, {
      filter: options.project ? { entity, project: options.project } : { entity },
      orderField: "created_at",
      order: "desc",
      after: options.after,
      limit: options.limit,
      what: "model",
    });
  }

  /**
   * Creates a model with its tracking run and its step-0 checkpoint, or returns the existing one of
   * that name when `returnExisting` (same base model only). The unique index makes concurrent
   * creates of one name converge on one model.
   */
  /** `id`: the model's id when its creator names it (a Tinker training run's `{session}:train:{n}`); else a new UUID. */
  async create(input: { entity: string; project: string; name: string; baseModel: string; returnExisting: boolean; id?: string }): Promise<{ model: ModelRecord; created: boolean }> {
    for (const [field, value] of [["project", input.project], ["name", input.name]] as const) {
      if (!NAME_PATTERN.test(value)) {
        throw badRequest(`${field} "${value}" must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit`);
      }
    }
    if (!this.catalog.has(input.baseModel)) {
      throw badRequest(`unknown base model "${input.baseModel}"; this deployment offers: ${this.catalog.names().join(", ")} (GET /v1/preview/base-models)`);
    }
    const record: ModelRecord = {
      _id: input.id ?? randomUUID(),
      entity: input.entity,
      project: input.project,
      name: input.name,
      base_model: input.baseModel,
      run_id: Runs.newRunId(),
      created_at: new Date(),
    };
    let model = record;
    let created = true;
    try {
      await this.models.insertOne(record);
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      const existing = await this.models.findOne({ entity: input.entity, project: input.project, name: input.name });
      if (!existing) throw new ApiError("conflict", "the model was being created and deleted at the same time; retry");
      if (!input.returnExisting) {
        throw conflict(`model "${input.name}" already exists in ${input.entity}/${input.project} (id ${existing._id}); pass return_existing: true to get it`);
      }
      if (existing.base_model !== input.baseModel) {
        throw conflict(`model "${input.name}" already exists in ${input.entity}/${input.project} on base model "${existing.base_model}", not "${input.baseModel}"`);
      }
      model = existing;
      created = false;
    }
    // Idempotent, so a create interrupted between these steps is repaired by the next one.
    await this.runs.ensure({ _id: model.run_id, entity: model.entity, project: model.project, name: model.name, model_id: model._id });
    await this.checkpoints.ensureStepZero(model._id);
    return { model, created };
  }

  /** The caller's model, or 404 (also for another entity's model: indistinguishable from absent). */
  async getOwned(entity: string, modelId: string): Promise<ModelRecord> {
    const model = await this.models.findOne({ _id: modelId, entity });
    if (!model) throw notFound(`model ${modelId} not found`);
    return model;
  }

  /** Any entity's model (for the training worker, which acts for the job's owner). */
  async get(modelId: string): Promise<ModelRecord | null> {
    return this.models.findOne({ _id: modelId });
  }

  async findByName(entity: string, project: string, name: string): Promise<ModelRecord | null> {
    return this.models.findOne({ entity, project, name });
  }

  async remove(modelId: string): Promise<void> {
    await this.models.deleteOne({ _id: modelId });
  }
}
