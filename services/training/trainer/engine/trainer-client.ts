// A client of one trainer process (proto/srl/trainer/v1/trainer.proto) over gRPC: the job's input
// streamed in (rows in batches and adapters in chunks, so no message nears a size limit), its
// progress, the new adapter and the result streamed back.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  AdapterRole,
  Trainer,
  TrainRequestSchema,
  type BaseModel,
  type DescribeResponse,
  type FileChunk,
  type InspectBaseModelResponse,
  type TrainRequest,
} from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import { type AdapterFileSet, TrainingInputError } from "../api.js";
import type { TrainerJob, TrainerOutcome, TrainerProgress } from "./trainer-job.js";
import { convertRequests, jobRequests, scoreRequests } from "./wire.js";

/** The trainer went away mid-job (crashed, restarted, unreachable): the job may be tried again. */
export class TrainerLostError extends Error {}
/** The trainer refused the base model (it cannot train it, or cannot reach its file). */
export class TrainerUnsupportedError extends Error {}
/** The trainer is running another job. */
export class TrainerBusyError extends Error {}
/** The trainer could not be reached before the job started: another trainer may take it. */
export class TrainerUnreachableError extends TrainerLostError {}

export class TrainerClient {
  private readonly client: Client<typeof Trainer>;

  constructor(readonly url: string) {
    this.client = createClient(Trainer, createGrpcTransport({ baseUrl: url, readMaxBytes: 64 << 20, writeMaxBytes: 64 << 20 }));
  }

  async describe(timeoutMs = 5_000): Promise<DescribeResponse> {
    return this.client.describe({}, { timeoutMs }).catch((error: unknown) => {
      throw mapError(error, this.url);
    });
  }

  async inspect(baseModel: BaseModel, timeoutMs = 60_000): Promise<InspectBaseModelResponse> {
    return this.client.inspectBaseModel({ baseModel }, { timeoutMs }).catch((error: unknown) => {
      throw mapError(error, this.url);
    });
  }

  /** Runs one job; progress arrives as it happens. */
  async train(job: TrainerJob, progress: TrainerProgress, signal: AbortSignal): Promise<TrainerOutcome> {
    const files = new FileCollector();
    let answered = false;
    try {
      for await (const response of this.client.train(requestStream(jobRequests(job)), { signal })) {
        answered = true;
        const message = response.message;
        switch (message.case) {
          case "started":
            progress.started(message.value.numSteps, { device: message.value.device, threads: message.value.threads, loadSeconds: message.value.loadSeconds });
            break;
          case "step":
            progress.step(message.value.step, message.value.metrics);
            break;
          case "file":
            files.add(message.value);
            break;
          case "finished":
            return { trained: message.value.trained, adapter: files.fileSet() };
        }
      }
    } catch (error) {
      const mapped = mapError(error, this.url);
      throw !answered && ConnectError.from(error).code === Code.Unavailable ? new TrainerUnreachableError(mapped.message) : mapped;
    }
    throw new TrainerLostError(`the trainer at ${this.url} ended the job without a result`);
  }

  /** log p(tokens[t + 1] | tokens[..t]) of each row under the base model plus an optional adapter. */
  async score(baseModel: BaseModel, rows: readonly (readonly number[])[], adapter: { format: "gguf" | "peft"; files: Record<string, Uint8Array> } | null, signal?: AbortSignal): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    try {
      for await (const response of this.client.score(requestStream(scoreRequests(baseModel, rows, adapter)), { signal })) {
        for (const row of response.rows) out.push(Float32Array.from(row.logprobs));
      }
    } catch (error) {
      throw mapError(error, this.url);
    }
    return out;
  }

  /**
   * A LoRA adapter in PEFT's format (adapter_config.json, adapter_model.safetensors) converted for
   * the base model: llama.cpp's GGUF and the PEFT files as the trainer writes them. The trainer
   * reads only the base model's GGUF header and takes no job lock, so a busy trainer answers too.
   */
  async convertAdapter(baseModel: BaseModel, peftFiles: Record<string, Uint8Array>, signal?: AbortSignal): Promise<AdapterFileSet> {
    const files = new FileCollector();
    try {
      for await (const response of this.client.convertAdapter(requestStream(convertRequests(baseModel, peftFiles)), { signal })) {
        if (response.message.case === "file") files.add(response.message.value);
        if (response.message.case === "finished") return files.fileSet();
      }
    } catch (error) {
      throw mapError(error, this.url);
    }
    throw new TrainerLostError(`the trainer at ${this.url} ended the conversion without a result`);
  }
}

/** An adapter's files as they arrive in `file` chunks (each file's chunks in order). */
class FileCollector {
  private readonly parts = new Map<string, Buffer[]>();

  add(chunk: FileChunk): void {
    const key = `${chunk.format}/${chunk.filename}`;
    this.parts.set(key, [...(this.parts.get(key) ?? []), Buffer.from(chunk.data)]);
  }

  fileSet(): AdapterFileSet {
    const output: AdapterFileSet = { gguf: {}, peft: {} };
    for (const [key, chunks] of this.parts) {
      const [format, filename] = key.split("/", 2) as [string, string];
      if (format === "gguf" || format === "peft") output[format][filename] = Buffer.concat(chunks);
    }
    return output;
  }
}

async function* requestStream(messages: Iterable<TrainRequest["message"]>): AsyncIterable<TrainRequest> {
  for (const message of messages) yield create(TrainRequestSchema, { message });
}

function mapError(error: unknown, url: string): Error {
  const e = ConnectError.from(error);
  switch (e.code) {
    case Code.InvalidArgument:
      return new TrainingInputError(e.rawMessage);
    case Code.FailedPrecondition:
      return new TrainerUnsupportedError(e.rawMessage);
    case Code.ResourceExhausted:
      return new TrainerBusyError(e.rawMessage);
    case Code.Canceled:
      return Object.assign(new Error(`cancelled: ${e.rawMessage}`), { name: "AbortError" });
    case Code.Unavailable:
    case Code.Unknown:
    case Code.Aborted:
    case Code.DeadlineExceeded:
      return new TrainerLostError(`the trainer at ${url} is unreachable or stopped: ${e.rawMessage}`);
    default:
      return new Error(`trainer (${url}): ${e.rawMessage}`);
  }
}

export { AdapterRole };
