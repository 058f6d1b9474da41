// What the run views read from the API: models by id, a run's metric history read incrementally,
// a model's newest checkpoint step and newest job.
import { Code, ConnectError } from "@connectrpc/connect";
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { models, training } from "../api.js";
import type { Point } from "../chart.js";

/** The models with these ids (in the order asked; missing or another entity's ones left out). */
export async function findModels(ids: readonly string[], signal?: AbortSignal): Promise<Model[]> {
  return (await Promise.all(ids.map((id) => findModel(id, signal)))).flatMap((model) => model ?? []);
}

/** The model, or null when this key's entity has no model with that id. */
export async function findModel(id: string, signal?: AbortSignal): Promise<Model | null> {
  try {
    return await models.getModel({ modelId: id }, { signal });
  } catch (error) {
    if (ConnectError.from(error).code === Code.NotFound) return null;
    throw error;
  }
}

/** The step of a model's newest checkpoint (0: only the base model). */
export async function latestStep(modelId: string, signal?: AbortSignal): Promise<number> {
  const page = await models.listCheckpoints({ modelId, limit: 1, order: "desc" }, { signal });
  return page.data[0]?.step ?? 0;
}

/** A model's newest training job (ListTrainingJobs is newest first), or null. */
export async function newestJob(modelId: string, signal?: AbortSignal): Promise<TrainingJob | null> {
  const page = await training.listTrainingJobs({ modelId, limit: 1 }, { signal });
  return page.data[0] ?? null;
}

/**
 * A run's metric history, kept between refreshes: each load reads only the points logged since the
 * last one (the history is append-only and listed oldest first). A step logged twice keeps its
 * newest value, as a run's summary does.
 */
export class RunHistory {
  private after: string | undefined;
  private readonly byName = new Map<string, Map<number, number>>();

  constructor(private readonly runId: string | undefined) {}

  /** Reads what is new; true when there was anything. */
  async load(signal?: AbortSignal): Promise<boolean> {
    if (!this.runId) return false;
    let changed = false;
    for (;;) {
      const page = await models.listRunMetrics({ runId: this.runId, limit: 1000, after: this.after }, { signal });
      for (const point of page.data) {
        let steps = this.byName.get(point.name);
        if (!steps) this.byName.set(point.name, (steps = new Map()));
        steps.set(point.step, point.value);
        changed = true;
      }
      if (page.lastId) this.after = page.lastId;
      if (!page.hasMore || !page.lastId) return changed;
    }
  }

  /** Metric name → its points by step. */
  series(): Map<string, Point[]> {
    const out = new Map<string, Point[]>();
    for (const [name, steps] of this.byName) {
      out.set(
        name,
        [...steps].map(([step, value]) => ({ step, value })).sort((a, b) => a.step - b.step),
      );
    }
    return out;
  }
}
