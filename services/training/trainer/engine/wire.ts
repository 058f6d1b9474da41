// A TrainerJob as the Train call's request stream: the spec, the input adapters in chunks, the
// rows in batches of bounded size, then `end` (Score and ConvertAdapter share the framing). Nothing here is bigger than ~1 MiB, so no message
// limit is reached however large the RL batch.
import { create } from "@bufbuild/protobuf";
import {
  AdapterRole,
  BaseModelSchema,
  FileChunkSchema,
  InputEndSchema,
  JobSpecSchema,
  RowBatchSchema,
  SftLossSchema,
  TokenRowSchema,
  type JobSpec,
  type BaseModel,
  type FileChunk,
  type TrainRequest,
} from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import type { BaseModelRef, InputAdapter } from "../api.js";
import type { PreparedRow, TrainerJob } from "./trainer-job.js";

const CHUNK_BYTES = 1 << 20;
/** Tokens per RowBatch message (each token costs up to ~10 bytes on the wire). */
const BATCH_TOKENS = 64 * 1024;

type RequestMessage = TrainRequest["message"];

export function baseModelMessage(ref: BaseModelRef): BaseModel {
  return create(BaseModelSchema, { name: ref.name, ggufPath: ref.ggufPath, ggufSize: BigInt(ref.ggufSize), source: ref.source, trainWeights: ref.trainWeights });
}

export function* jobRequests(job: TrainerJob): Generator<RequestMessage> {
  const loss: JobSpec["loss"] = job.loss.kind === "sft" ? { case: "sft", value: create(SftLossSchema) } : { case: "rl", value: job.loss.settings };
  yield {
    case: "spec",
    value: create(JobSpecSchema, {
      jobId: job.jobId,
      baseModel: baseModelMessage(job.baseModel),
      lora: { ...job.lora, seed: BigInt(job.lora.seed) },
      loss,
      optimizer: job.optimizer,
      steps: job.steps.map((s) => ({ rows: s.rows, learningRate: s.learningRate })),
      numRows: job.rows.length,
      ...(job.logitsChunkTokens !== undefined ? { resources: { logitsChunkTokens: job.logitsChunkTokens } } : {}),
    }),
  };
  if (job.previousAdapter) yield* adapterChunks(job.previousAdapter, AdapterRole.PREVIOUS);
  if (job.referenceAdapter) yield* adapterChunks(job.referenceAdapter, AdapterRole.REFERENCE);
  yield* rowBatches(job.rows);
  yield { case: "end", value: create(InputEndSchema) };
}

export function* scoreRequests(baseModel: BaseModel, rows: readonly (readonly number[])[], adapter: InputAdapter | null): Generator<RequestMessage> {
  yield { case: "spec", value: create(JobSpecSchema, { jobId: "score", baseModel, numRows: rows.length }) };
  if (adapter) yield* adapterChunks(adapter, AdapterRole.PREVIOUS);
  yield* rowBatches(rows.map((tokens) => ({ tokens: [...tokens], trained: tokens.map(() => true), advantage: 0, weight: 0 })));
  yield { case: "end", value: create(InputEndSchema) };
}

/** ConvertAdapter's request stream: the base model, the PEFT files as the INITIAL adapter, `end`. */
export function* convertRequests(baseModel: BaseModel, peftFiles: Record<string, Uint8Array>): Generator<RequestMessage> {
  yield { case: "spec", value: create(JobSpecSchema, { jobId: "convert", baseModel }) };
  yield* adapterChunks({ format: "peft", files: peftFiles }, AdapterRole.INITIAL);
  yield { case: "end", value: create(InputEndSchema) };
}

function* adapterChunks(adapter: InputAdapter, role: AdapterRole): Generator<RequestMessage> {
  yield* fileChunks(adapter.files, role, adapter.format);
}

/** Files as `file` messages of 1 MiB pieces, at least one per file (Train's and AdapterCommand's alike). */
export function* fileChunks(files: Record<string, Uint8Array>, role: AdapterRole, format: string): Generator<{ case: "file"; value: FileChunk }> {
  for (const [filename, data] of Object.entries(files)) {
    for (let start = 0; start < Math.max(data.length, 1); start += CHUNK_BYTES) {
      yield { case: "file", value: create(FileChunkSchema, { role, format, filename, data: data.subarray(start, start + CHUNK_BYTES) }) };
    }
  }
}

function* rowBatches(rows: readonly PreparedRow[]): Generator<RequestMessage> {
  let batch: PreparedRow[] = [];
  let tokens = 0;
  const flush = () => create(RowBatchSchema, { rows: batch.map(tokenRow) });
  for (const row of rows) {
    if (batch.length > 0 && tokens + row.tokens.length > BATCH_TOKENS) {
      yield { case: "rows", value: flush() };
      batch = [];
      tokens = 0;
    }
    batch.push(row);
    tokens += row.tokens.length;
  }
  if (batch.length > 0) yield { case: "rows", value: flush() };
}

function tokenRow(row: PreparedRow) {
  return create(TokenRowSchema, {
    tokens: row.tokens,
    trained: row.trained,
    samplerLogprobs: row.samplerLogprobs ? row.samplerLogprobs.map((v) => (v === null ? NaN : v)) : [],
    advantage: row.advantage,
    weight: row.weight,
  });
}
