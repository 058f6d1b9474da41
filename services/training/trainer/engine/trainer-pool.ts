// The trainers a worker may use: the local process it supervises (the default), or the trainers
// named by TRAINER_URLS (other machines, CUDA). A job goes to a trainer that is not busy; a busy
// one answers RESOURCE_EXHAUSTED and the next is tried, then all again after a pause.
import type { InspectBaseModelResponse } from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import { type AdapterFileSet, type BaseModelRef, type InputAdapter, TrainingInputError } from "../api.js";
import type { LocalTrainer } from "./local-trainer.js";
import { TrainerBusyError, TrainerClient, TrainerLostError, TrainerUnreachableError, TrainerUnsupportedError } from "./trainer-client.js";
import type { TrainerJob, TrainerOutcome, TrainerProgress } from "./trainer-job.js";
import { baseModelMessage } from "./wire.js";

const ALL_BUSY_PAUSE_MS = 2_000;

export class TrainerPool {
  private readonly remotes: TrainerClient[];
  private next = 0;
  private readonly inspected = new Map<string, Promise<InspectBaseModelResponse>>();

  constructor(urls: readonly string[], private readonly local: LocalTrainer | null) {
    this.remotes = urls.map((url) => new TrainerClient(url));
    if (this.remotes.length === 0 && !local) throw new Error("a trainer pool needs TRAINER_URLS or a local trainer");
  }

  describeTargets(): string {
    return this.remotes.length > 0 ? this.remotes.map((r) => r.url).join(", ") : "the local trainer process";
  }

  async train(job: TrainerJob, progress: TrainerProgress, signal: AbortSignal): Promise<TrainerOutcome> {
    return this.withTrainer(signal, (client) => client.train(job, progress, signal));
  }

  async score(baseModel: BaseModelRef, rows: readonly (readonly number[])[], adapter: InputAdapter | null, signal: AbortSignal): Promise<Float32Array[]> {
    return this.withTrainer(signal, (client) => client.score(baseModelMessage(baseModel), rows, adapter, signal));
  }

  /**
   * What the trainer says of a base model (cached per file); `trainable: false` with the reason
   * for one it cannot train. Throws when no trainer answers.
   */
  inspect(ref: BaseModelRef): Promise<InspectBaseModelResponse> {
    const key = JSON.stringify([ref.name, ref.ggufPath, ref.ggufSize, ref.source, ref.trainWeights]);
    let cached = this.inspected.get(key);
    if (!cached) {
      cached = this.askAny((client) => client.inspect(baseModelMessage(ref)));
      cached.catch(() => this.inspected.delete(key)); // an unreachable trainer is asked again next time
      this.inspected.set(key, cached);
    }
    return cached;
  }

  /**
   * A PEFT LoRA adapter (adapter_config.json, adapter_model.safetensors) converted for the base
   * model into the files the engine serves (the GGUF) and the trainer's PEFT files. Any trainer
   * converts: it takes no job lock, so a busy one answers. TrainingInputError for an adapter that
   * is unreadable or does not fit the base model.
   */
  convertAdapter(ref: BaseModelRef, peftFiles: Record<string, Uint8Array>, signal?: AbortSignal): Promise<AdapterFileSet> {
    return this.askAny((client) => client.convertAdapter(baseModelMessage(ref), peftFiles, signal), signal);
  }

  async stop(): Promise<void> {
    await this.local?.stop();
  }

  /**
   * A question any trainer can answer: the first that answers does (the job rotation is left
   * alone). Bad input is the same answer from every trainer, so it is not asked again.
   */
  private async askAny<T>(ask: (client: TrainerClient) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.local) return ask(await this.local.client());
    let last: unknown;
    for (const client of this.remotes) {
      try {
        return await ask(client);
      } catch (error) {
        if (error instanceof TrainingInputError || signal?.aborted) throw error;
        last = error;
      }
    }
    throw last;
  }

  private async withTrainer<T>(signal: AbortSignal, use: (client: TrainerClient) => Promise<T>): Promise<T> {
    for (;;) {
      const candidates: { client: TrainerClient; generation: number | null }[] = this.local
        ? [{ client: await this.local.client(), generation: this.local.generation }]
        : this.rotation();
      let unreachable: TrainerUnreachableError | undefined;
      let busy = false;
      for (const { client, generation } of candidates) {
        try {
          return await use(client);
        } catch (error) {
          if (error instanceof TrainerBusyError) {
            busy = true;
            continue;
          }
          if (error instanceof TrainerUnreachableError && generation === null) {
            unreachable = error; // another trainer may take the job
            continue;
          }
          if (error instanceof TrainingInputError || error instanceof TrainerUnsupportedError || signal.aborted) throw error;
          if (this.local && generation !== null && !this.local.isAlive(generation)) {
            throw new TrainerLostError(`the trainer process stopped during the job (see ${this.local.logFile}): ${error instanceof Error ? error.message : String(error)}`);
          }
          throw error;
        }
      }
      // None took it: wait while some are busy; when none could be reached, the job is lost (retried later).
      if (!busy && unreachable) throw unreachable;
      await pause(ALL_BUSY_PAUSE_MS, signal);
    }
  }

  private rotation(): { client: TrainerClient; generation: null }[] {
    const start = this.next++ % this.remotes.length;
    return this.remotes.map((_, i) => ({ client: this.remotes[(start + i) % this.remotes.length]!, generation: null }));
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(Object.assign(new Error("cancelled while waiting for a free trainer"), { name: "AbortError" }));
    }
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
