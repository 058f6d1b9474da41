// A client of one trainer process (proto/srl/trainer/v1/trainer.proto) over gRPC: the job's input
// streamed in (rows in batches and adapters in chunks, so no message nears a size limit), its
// progress, the new adapter and the result streamed back. Every call carries the trainer's secret
// (`authorization: Bearer`) and a deadline; https:// URLs use TLS.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  AdapterCommandRequestSchema,
  AdapterRole,
  Trainer,
  TrainRequestSchema,
  type BaseModel,
  type DescribeResponse,
  type FileChunk,
  type InspectBaseModelResponse,
  type Started,
  type TrainRequest,
} from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import { checkAdapterFileName } from "../../../weights/index.js";
import { type AdapterFileSet, type TrainerStartInfo, TrainingInputError } from "../api.js";
import { type LiveAdapterCommand, LiveAdapterExistsError, LiveAdapterLostError, type LiveAdapterResult } from "../live-adapter.js";
import { AdapterAnswer, adapterCommandRequests } from "./adapter-wire.js";
import type { TrainerJob, TrainerOutcome, TrainerProgress } from "./trainer-job.js";
import { describeDuration } from "./trainer-settings.js";
import { wideWindowSessions } from "./wide-window-sessions.js";
import { convertRequests, jobRequests, scoreRequests } from "./wire.js";

/**
 * Largest message either way: the trainer's limit (srl_trainer/server.py MAX_MESSAGE_BYTES). What
 * this client sends is far smaller (./wire.ts); a bigger answer is refused rather than held.
 */
export const MAX_MESSAGE_BYTES = 8 << 20;
/** Largest adapter file a trainer may send back (all of a 70B model's rank-64 LoRA is ~1 GB). */
const MAX_RETURNED_FILE_BYTES = 2 ** 31 - 1;

/** The trainer went away mid-job (crashed, restarted, unreachable): the job may be tried again. */
export class TrainerLostError extends Error {}
/** The trainer refused the base model (it cannot train it, or cannot reach its file). */
export class TrainerUnsupportedError extends Error {}
/** The trainer is running another job. */
export class TrainerBusyError extends Error {}
/** The trainer could not be reached before the job started: another trainer may take it. */
export class TrainerUnreachableError extends TrainerLostError {}
/** A call ran past its deadline (a hung or overloaded trainer): the job fails, it is not retried. */
export class TrainerTimeoutError extends Error {}
import { TrainerResultError } from "./trainer-result-error.js";
export { TrainerResultError };

export interface TrainerAuth {
  /** Sent as `authorization: Bearer <secret>` on every call; "" sends none (a loopback trainer started by hand). */
  secret: string;
  /** PEM roots for an https:// trainer; undefined: the system's. */
  ca?: string;
}

/** A call's deadline: the time left, and the limit as the error names it ("6 h (TRAINER_JOB_TIMEOUT_MS)"). */
export interface Deadline {
  ms: number;
  limit: string;
}

export class TrainerClient {
  private readonly client: Client<typeof Trainer>;

  constructor(
    readonly url: string,
    auth: TrainerAuth,
  ) {
    const withSecret: Interceptor = (next) => (request) => {
      request.header.set("authorization", `Bearer ${auth.secret}`);
      return next(request);
    };
    this.client = createClient(
      Trainer,
      createGrpcTransport({
        baseUrl: url,
        readMaxBytes: MAX_MESSAGE_BYTES,
        writeMaxBytes: MAX_MESSAGE_BYTES,
        interceptors: auth.secret ? [withSecret] : [],
        sessionManager: wideWindowSessions(url, url.startsWith("https:") && auth.ca !== undefined ? { ca: auth.ca } : {}),
      }),
    );
  }

  async describe(timeoutMs = 5_000): Promise<DescribeResponse> {
    return this.client.describe({}, { timeoutMs }).catch((error: unknown) => {
      throw mapError(error, this.url, { ms: timeoutMs, limit: `${describeDuration(timeoutMs)} (a health check)` });
    });
  }

  async inspect(baseModel: BaseModel, deadline: Deadline): Promise<InspectBaseModelResponse> {
    return this.client.inspectBaseModel({ baseModel }, { timeoutMs: deadline.ms }).catch((error: unknown) => {
      throw mapError(error, this.url, deadline);
    });
  }

  /** Runs one job; progress arrives as it happens. */
  async train(job: TrainerJob, progress: TrainerProgress, signal: AbortSignal, deadline: Deadline): Promise<TrainerOutcome> {
    const files = new FileCollector();
    let answered = false;
    try {
      for await (const response of this.client.train(requestStream(jobRequests(job)), { signal, timeoutMs: deadline.ms })) {
        answered = true;
        const message = response.message;
        switch (message.case) {
          case "started":
            progress.started(message.value.numSteps, startInfo(message.value));
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
      if (error instanceof TrainerResultError) throw error;
      const mapped = mapError(error, this.url, deadline);
      throw !answered && ConnectError.from(error).code === Code.Unavailable ? new TrainerUnreachableError(mapped.message) : mapped;
    }
    throw new TrainerLostError(`the trainer at ${this.url} ended the job without a result`);
  }

  /** log p(tokens[t + 1] | tokens[..t]) of each row under the base model plus an optional adapter. */
  async score(baseModel: BaseModel, rows: readonly (readonly number[])[], adapter: { format: "gguf" | "peft"; files: Record<string, Uint8Array> } | null, signal: AbortSignal | undefined, deadline: Deadline): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    try {
      for await (const response of this.client.score(requestStream(scoreRequests(baseModel, rows, adapter)), { signal, timeoutMs: deadline.ms })) {
        for (const row of response.rows) out.push(Float32Array.from(row.logprobs));
      }
    } catch (error) {
      throw mapError(error, this.url, deadline);
    }
    return out;
  }

  /**
   * A LoRA adapter in PEFT's format (adapter_config.json, adapter_model.safetensors) converted for
   * the base model: llama.cpp's GGUF and the PEFT files as the trainer writes them. The trainer
   * reads only the base model's GGUF header and takes no job lock, so a busy trainer answers too.
   */
  async convertAdapter(baseModel: BaseModel, peftFiles: Record<string, Uint8Array>, signal: AbortSignal | undefined, deadline: Deadline): Promise<AdapterFileSet> {
    const files = new FileCollector();
    try {
      for await (const response of this.client.convertAdapter(requestStream(convertRequests(baseModel, peftFiles)), { signal, timeoutMs: deadline.ms })) {
        if (response.message.case === "file") files.add(response.message.value);
        if (response.message.case === "finished") return files.fileSet();
      }
    } catch (error) {
      if (error instanceof TrainerResultError) throw error;
      throw mapError(error, this.url, deadline);
    }
    throw new TrainerLostError(`the trainer at ${this.url} ended the conversion without a result`);
  }

  /** One command on a live adapter (trainer.proto AdapterCommand). */
  async adapterCommand(command: LiveAdapterCommand, signal: AbortSignal | undefined, deadline: Deadline): Promise<LiveAdapterResult> {
    const answer = new AdapterAnswer();
    try {
      const requests = (async function* () {
        for (const message of adapterCommandRequests(command)) yield create(AdapterCommandRequestSchema, { message });
      })();
      for await (const response of this.client.adapterCommand(requests, { signal, timeoutMs: deadline.ms })) {
        const result = answer.add(response);
        if (result) return result;
      }
    } catch (error) {
      if (error instanceof TrainerResultError) throw error;
      const e = ConnectError.from(error);
      if (e.code === Code.NotFound) throw new LiveAdapterLostError(e.rawMessage);
      if (e.code === Code.AlreadyExists) throw new LiveAdapterExistsError(e.rawMessage);
      throw mapError(error, this.url, deadline);
    }
    throw new TrainerLostError(`the trainer at ${this.url} ended the ${command.kind} command without a result`);
  }
}

/**
 * An adapter's files as they arrive in `file` chunks (each file's chunks in order). Only the
 * adapter files' own names are taken (a name becomes a path and a tar entry later), each file
 * bounded in size; anything else ends the call at once, before more of it is held.
 */
class FileCollector {
  private readonly parts = { gguf: new Map<string, { chunks: Buffer[]; bytes: number }>(), peft: new Map<string, { chunks: Buffer[]; bytes: number }>() };

  add(chunk: FileChunk): void {
    try {
      checkAdapterFileName(chunk.format, chunk.filename);
    } catch (error) {
      throw new TrainerResultError(`the trainer returned an invalid adapter: ${error instanceof Error ? error.message : String(error)}`);
    }
    const files = chunk.format === "gguf" ? this.parts.gguf : this.parts.peft;
    const file = files.get(chunk.filename) ?? { chunks: [], bytes: 0 };
    file.bytes += chunk.data.length;
    if (file.bytes > MAX_RETURNED_FILE_BYTES) throw new TrainerResultError(`the trainer returned an invalid adapter: ${chunk.filename} is over ${MAX_RETURNED_FILE_BYTES} bytes`);
    file.chunks.push(Buffer.from(chunk.data));
    files.set(chunk.filename, file);
  }

  fileSet(): AdapterFileSet {
    const collect = (files: Map<string, { chunks: Buffer[] }>) => Object.fromEntries([...files].map(([name, file]) => [name, Buffer.concat(file.chunks)]));
    return { gguf: collect(this.parts.gguf), peft: collect(this.parts.peft) };
  }
}

async function* requestStream(messages: Iterable<TrainRequest["message"]>): AsyncIterable<TrainRequest> {
  for (const message of messages) yield create(TrainRequestSchema, { message });
}

function startInfo(started: Started): TrainerStartInfo {
  return {
    device: started.device,
    threads: started.threads,
    loadSeconds: started.loadSeconds,
    microBatchTokens: started.microBatchTokens,
    gradientCheckpointing: started.gradientCheckpointing,
    activationBudgetBytes: Number(started.activationBudgetBytes),
    activationBytesPerToken: started.activationBytesPerToken,
    resources: started.resources,
  };
}

function mapError(error: unknown, url: string, deadline: Deadline): Error {
  const e = ConnectError.from(error);
  switch (e.code) {
    case Code.DeadlineExceeded:
      return new TrainerTimeoutError(`the trainer at ${url} did not answer within ${deadline.limit}; the call was stopped`);
    case Code.Unauthenticated:
      return new Error(`the trainer at ${url} refused this service's secret (TRAINER_SECRET, or DATA_DIR/trainer-secret for the local trainer): ${e.rawMessage}`);
    case Code.InvalidArgument:
      return new TrainingInputError(e.rawMessage);
    case Code.FailedPrecondition:
      return new TrainerUnsupportedError(e.rawMessage);
    case Code.ResourceExhausted:
      // Also the code of a message over a size limit (either side), which waiting will not cure.
      return /\bbusy\b/.test(e.rawMessage) ? new TrainerBusyError(e.rawMessage) : new Error(`trainer (${url}): a message over the ${MAX_MESSAGE_BYTES}-byte limit: ${e.rawMessage}`);
    case Code.Canceled:
      return Object.assign(new Error(`cancelled: ${e.rawMessage}`), { name: "AbortError" });
    case Code.Unavailable:
    case Code.Unknown:
    case Code.Aborted:
      return new TrainerLostError(`the trainer at ${url} is unreachable or stopped: ${e.rawMessage}`);
    default:
      return new Error(`trainer (${url}): ${e.rawMessage}`);
  }
}

export { AdapterRole };
