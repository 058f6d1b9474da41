// The `evaluations` collection: each evaluation of a model, kept until it or its model is deleted.
// Stored as protobuf binary (a JSON schema's `$schema`/`$ref` keys are keys MongoDB refuses), the
// rows apart from the rest so that a list reads no outputs. Only the entity that ran an evaluation
// sees it; another's reads as absent.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Binary, Collection, Db } from "mongodb";
import { EvaluationSchema, type Evaluation } from "../../gen/srl/v1/evaluations_pb.js";
import { notFound } from "../core/errors.js";

interface EvaluationRecord {
  _id: string;
  entity: string;
  model_id: string;
  created_at: Date;
  /** The Evaluation without its rows. */
  summary: Binary | Uint8Array;
  /** An Evaluation holding only the rows. */
  rows: Binary | Uint8Array;
}

export class EvaluationStore {
  private readonly records: Collection<EvaluationRecord>;

  constructor(db: Db) {
    this.records = db.collection<EvaluationRecord>("evaluations");
  }

  async ensureIndexes(): Promise<void> {
    await this.records.createIndex({ model_id: 1, created_at: -1 });
  }

  async save(entity: string, evaluation: Evaluation): Promise<void> {
    await this.records.insertOne({
      _id: evaluation.id,
      entity,
      model_id: evaluation.modelId,
      created_at: new Date(evaluation.createdAt),
      summary: toBinary(EvaluationSchema, create(EvaluationSchema, { ...evaluation, rows: [] })),
      rows: toBinary(EvaluationSchema, create(EvaluationSchema, { rows: evaluation.rows })),
    });
  }

  /** The evaluation with every row, or 404. */
  async getOwned(entity: string, id: string): Promise<Evaluation> {
    const record = await this.records.findOne({ _id: id, entity });
    if (!record) throw notFound(`evaluation ${id} not found`);
    return { ...decode(record.summary), rows: decode(record.rows).rows };
  }

  /** A model's evaluations, newest first, without rows (the caller has checked the model is theirs). */
  async listForModel(modelId: string, limit: number): Promise<Evaluation[]> {
    const records = await this.records.find({ model_id: modelId }, { projection: { rows: 0 } }).sort({ created_at: -1, _id: -1 }).limit(limit).toArray();
    return records.map((record) => decode(record.summary));
  }

  async deleteOwned(entity: string, id: string): Promise<void> {
    const { deletedCount } = await this.records.deleteOne({ _id: id, entity });
    if (deletedCount === 0) throw notFound(`evaluation ${id} not found`);
  }

  /** With the model (models' ModelDeletion calls it). */
  async deleteForModel(modelId: string): Promise<void> {
    await this.records.deleteMany({ model_id: modelId });
  }
}

function decode(bytes: Binary | Uint8Array): Evaluation {
  return fromBinary(EvaluationSchema, bytes instanceof Uint8Array ? bytes : bytes.buffer);
}
