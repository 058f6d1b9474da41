// A live-adapter command as AdapterCommand's request stream (the command, state files in chunks,
// datums in batches of bounded size, `end`), and its answer collected from the response stream
// (per-datum outputs, state or adapter files, the result). Chunked like ./wire.ts, so no message
// nears the size limit however large the batch.
import { create } from "@bufbuild/protobuf";
import {
  AdapterCommandKind,
  AdapterCommandSchema,
  AdapterDatumBatchSchema,
  AdapterRole,
  InputEndSchema,
  type AdapterCommandRequest,
  type AdapterCommandResponse,
  type AdapterDatum,
} from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import { checkAdapterFileName } from "../../../weights/index.js";
import type { LiveAdapterCommand, LiveAdapterCommandKind, LiveAdapterDatum, LiveAdapterResult } from "../live-adapter.js";
import { baseModelMessage, fileChunks } from "./wire.js";
import { TrainerResultError } from "./trainer-result-error.js";

/** Values per datum batch (tokens and every input list counted; each costs up to ~5-10 bytes). */
const BATCH_VALUES = 128 * 1024;
/** Most bytes of state or adapter files one command may bring back (a 70B rank-64 LoRA with its moments is ~3 GB). */
const MAX_RETURNED_BYTES = 2 ** 32;
/** The names SAVE_STATE may use for its files (they become blob names, never paths). */
const STATE_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const KIND: Record<LiveAdapterCommandKind, AdapterCommandKind> = {
  create: AdapterCommandKind.CREATE,
  forward: AdapterCommandKind.FORWARD,
  forward_backward: AdapterCommandKind.FORWARD_BACKWARD,
  optim_step: AdapterCommandKind.OPTIM_STEP,
  save_state: AdapterCommandKind.SAVE_STATE,
  load_state: AdapterCommandKind.LOAD_STATE,
  export: AdapterCommandKind.EXPORT,
  close: AdapterCommandKind.CLOSE,
};

type RequestMessage = AdapterCommandRequest["message"];

export function* adapterCommandRequests(command: LiveAdapterCommand): Generator<RequestMessage> {
  const datums = command.datums ?? [];
  yield {
    case: "command",
    value: create(AdapterCommandSchema, {
      kind: KIND[command.kind],
      adapterId: command.adapterId,
      ...(command.baseModel ? { baseModel: baseModelMessage(command.baseModel) } : {}),
      ...(command.lora ? { lora: { rank: command.lora.rank, alpha: command.lora.alpha, seed: BigInt(command.lora.seed), targetModules: command.lora.targetModules } } : {}),
      lossFn: command.lossFn ?? "",
      lossFnConfig: command.lossFnConfig ?? {},
      lossFnConfigText: command.lossFnConfigText ?? {},
      ...(command.adam ? { adam: command.adam } : {}),
      withOptimizer: command.withOptimizer ?? false,
      outputFormats: command.outputFormats ?? [],
      numDatums: datums.length,
    }),
  };
  yield* fileChunks(command.stateFiles ?? {}, AdapterRole.STATE, "state");
  let batch: AdapterDatum[] = [];
  let values = 0;
  for (const datum of datums) {
    const size = datumValues(datum);
    if (batch.length > 0 && values + size > BATCH_VALUES) {
      yield { case: "datums", value: create(AdapterDatumBatchSchema, { datums: batch }) };
      batch = [];
      values = 0;
    }
    batch.push({
      $typeName: "srl.trainer.v1.AdapterDatum",
      tokens: datum.tokens,
      targetTokens: datum.targetTokens,
      inputs: Object.fromEntries(Object.entries(datum.inputs).map(([name, list]) => [name, { $typeName: "srl.trainer.v1.FloatList", values: Array.from(list) }])),
    });
    values += size;
  }
  if (batch.length > 0) yield { case: "datums", value: create(AdapterDatumBatchSchema, { datums: batch }) };
  yield { case: "end", value: create(InputEndSchema) };
}

function datumValues(datum: LiveAdapterDatum): number {
  return datum.tokens.length + datum.targetTokens.length + Object.values(datum.inputs).reduce((sum, list) => sum + list.length, 0);
}

/** Gathers a command's answer; anything no checkpoint may hold (a file name, a size) ends it at once. */
export class AdapterAnswer {
  private readonly outputs: Record<string, Float32Array>[] = [];
  private readonly files = { state: new Map<string, Buffer[]>(), gguf: new Map<string, Buffer[]>(), peft: new Map<string, Buffer[]>() };
  private bytes = 0;

  /** The result once the last message arrived; undefined before. */
  add(response: AdapterCommandResponse): LiveAdapterResult | undefined {
    const message = response.message;
    switch (message.case) {
      case "outputs":
        for (const output of message.value.outputs) this.outputs.push(Object.fromEntries(Object.entries(output.outputs).map(([name, list]) => [name, Float32Array.from(list.values)])));
        return undefined;
      case "file":
        this.addFile(message.value.format, message.value.filename, message.value.data);
        return undefined;
      case "result": {
        const lora = message.value.lora;
        const collect = (files: Map<string, Buffer[]>) => Object.fromEntries([...files].map(([name, chunks]) => [name, Buffer.concat(chunks)]));
        const adapter = this.files.gguf.size + this.files.peft.size > 0 ? { gguf: collect(this.files.gguf), peft: collect(this.files.peft) } : null;
        return {
          metrics: { ...message.value.metrics },
          optimizerSteps: Number(message.value.optimizerSteps),
          outputs: this.outputs,
          stateFiles: collect(this.files.state),
          adapter,
          lora: lora ? { rank: lora.rank, alpha: lora.alpha, seed: Number(lora.seed), targetModules: [...lora.targetModules] } : null,
        };
      }
      default:
        return undefined;
    }
  }

  private addFile(format: string, filename: string, data: Uint8Array): void {
    if (format === "state") {
      if (!STATE_FILE_NAME.test(filename)) throw new TrainerResultError(`the trainer returned a state file with an invalid name: ${JSON.stringify(filename.slice(0, 80))}`);
    } else {
      try {
        checkAdapterFileName(format, filename);
      } catch (error) {
        throw new TrainerResultError(`the trainer returned an invalid adapter: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    this.bytes += data.length;
    if (this.bytes > MAX_RETURNED_BYTES) throw new TrainerResultError(`the trainer returned more than ${MAX_RETURNED_BYTES} bytes of files`);
    const files = format === "state" ? this.files.state : format === "gguf" ? this.files.gguf : this.files.peft;
    const chunks = files.get(filename) ?? [];
    chunks.push(Buffer.from(data));
    files.set(filename, chunks);
  }
}
