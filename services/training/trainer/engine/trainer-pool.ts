// The trainers a worker may use: the local process it supervises (the default), or the trainers
// named by TRAINER_URLS (other machines, CUDA). A job goes to a trainer that is not busy; a busy
// one answers RESOURCE_EXHAUSTED and the next is tried, then all again after a pause. Every call
// has a deadline (./trainer-settings.ts): a job's, TRAINER_JOB_TIMEOUT_MS, spans its wait for a
// free trainer and its Train call; a local trainer that runs past it is restarted (it may be hung
// and holds the job lock), a remote one is left to its operator.
import type { InspectBaseModelResponse } from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import { createHash } from "node:crypto";
import { type AdapterFileSet, type BaseModelRef, type InputAdapter, TrainingInputError } from "../api.js";
import type { LiveAdapterCommand, LiveAdapterResult } from "../live-adapter.js";
import type { LocalTrainer } from "./local-trainer.js";
import { type Deadline, TrainerBusyError, TrainerClient, TrainerLostError, TrainerTimeoutError, TrainerUnreachableError, TrainerUnsupportedError } from "./trainer-client.js";
import type { TrainerJob, TrainerOutcome, TrainerProgress } from "./trainer-job.js";
import { describeDuration, TRAINER_TIMEOUT_DEFAULTS, type TrainerSettings } from "./trainer-settings.js";
import { baseModelMessage } from "./wire.js";

const ALL_BUSY_PAUSE_MS = 2_000;

export class TrainerPool {
  private readonly remotes: TrainerClient[];
  private next = 0;
  private readonly inspected = new Map<string, Promise<InspectBaseModelResponse>>();
  private readonly settings: TrainerSettings;

  /**
   * `settings`: the secret, CA and deadlines (services/app passes the configuration's,
   * trainer-settings.ts); by default no secret and the default deadlines, enough for a local
   * trainer, which has its own secret.
   */
  constructor(
    urls: readonly string[],
    private readonly local: LocalTrainer | null,
    settings?: TrainerSettings,
  ) {
    this.settings = settings ?? { secret: "", ca: undefined, ...TRAINER_TIMEOUT_DEFAULTS };
    if (urls.length > 0 && !this.settings.secret) throw new Error("trainers named by URL (TRAINER_URLS) need their shared secret (TRAINER_SECRET)");
    this.remotes = urls.map((url) => new TrainerClient(url, { secret: this.settings.secret, ca: this.settings.ca }));
    if (this.remotes.length === 0 && !local) throw new Error("a trainer pool needs TRAINER_URLS or a local trainer");
  }

  private get callDeadline(): Deadline {
    return { ms: this.settings.callTimeoutMs, limit: `${describeDuration(this.settings.callTimeoutMs)} (TRAINER_CALL_TIMEOUT_MS)` };
  }

  describeTargets(): string {
    return this.remotes.length > 0 ? this.remotes.map((r) => r.url).join(", ") : "the local trainer process";
  }

  async train(job: TrainerJob, progress: TrainerProgress, signal: AbortSignal): Promise<TrainerOutcome> {
    return this.withTrainer(signal, (client, deadline) => client.train(job, progress, signal, deadline));
  }

  async score(baseModel: BaseModelRef, rows: readonly (readonly number[])[], adapter: InputAdapter | null, signal: AbortSignal): Promise<Float32Array[]> {
    return this.withTrainer(signal, (client, deadline) => client.score(baseModelMessage(baseModel), rows, adapter, signal, deadline));
  }

  /**
   * What the trainer says of a base model (cached per file); `trainable: false` with the reason
   * for one it cannot train. Throws when no trainer answers.
   */
  inspect(ref: BaseModelRef): Promise<InspectBaseModelResponse> {
    const key = JSON.stringify([ref.name, ref.ggufPath, ref.ggufSize, ref.source, ref.trainWeights]);
    let cached = this.inspected.get(key);
    if (!cached) {
      cached = this.askAny((client) => client.inspect(baseModelMessage(ref), this.callDeadline));
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
    return this.askAny((client) => client.convertAdapter(baseModelMessage(ref), peftFiles, signal, this.callDeadline), signal);
  }

  /**
   * One command on a live adapter, on the trainer that holds it: the local one, or the remote its
   * id hashes to (stable while TRAINER_URLS is). A trainer busy with a job is waited for, within
   * TRAINER_JOB_TIMEOUT_MS.
   */
  async adapterCommand(command: LiveAdapterCommand, signal: AbortSignal): Promise<LiveAdapterResult> {
    const { jobTimeoutMs } = this.settings;
    const endsAt = Date.now() + jobTimeoutMs;
    for (;;) {
      const client = this.local ? await this.local.client() : this.holderOf(command.adapterId);
      const generation = this.local?.generation ?? null;
      const deadline: Deadline = { ms: Math.max(1, endsAt - Date.now()), limit: `${describeDuration(jobTimeoutMs)} (TRAINER_JOB_TIMEOUT_MS)` };
      try {
        return await client.adapterCommand(command, signal, deadline);
      } catch (error) {
        if (error instanceof TrainerTimeoutError && this.local && generation !== null) await this.local.restart(generation, error.message);
        if (!(error instanceof TrainerBusyError) || signal.aborted) throw error;
        if (Date.now() + ALL_BUSY_PAUSE_MS >= endsAt) throw new TrainerTimeoutError(`the trainer at ${client.url} stayed busy for ${describeDuration(jobTimeoutMs)} (TRAINER_JOB_TIMEOUT_MS)`);
        await pause(ALL_BUSY_PAUSE_MS, signal);
      }
    }
  }

  private holderOf(adapterId: string): TrainerClient {
    const index = createHash("sha256").update(adapterId).digest().readUInt32BE(0) % this.remotes.length;
    return this.remotes[index] as TrainerClient;
  }

  async stop(): Promise<void> {
    await this.local?.stop();
  }

  /**
   * A question any trainer can answer: the first that answers does (the job rotation is left
   * alone). Bad input is the same answer from every trainer, so it is not asked again.
   */
  private async askAny<T>(ask: (client: TrainerClient) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.local) return this.restartingHung(ask, await this.local.client(), this.local.generation);
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

  /** A local trainer's call past its deadline: the process may be hung, so it is started afresh. */
  private async restartingHung<T>(ask: (client: TrainerClient) => Promise<T>, client: TrainerClient, generation: number): Promise<T> {
    try {
      return await ask(client);
    } catch (error) {
      if (error instanceof TrainerTimeoutError && this.local) await this.local.restart(generation, error.message);
      throw error;
    }
  }

  private async withTrainer<T>(signal: AbortSignal, use: (client: TrainerClient, deadline: Deadline) => Promise<T>): Promise<T> {
    const { jobTimeoutMs } = this.settings;
    const endsAt = Date.now() + jobTimeoutMs;
    for (;;) {
      const candidates: { client: TrainerClient; generation: number | null }[] = this.local
        ? [{ client: await this.local.client(), generation: this.local.generation }]
        : this.rotation();
      let unreachable: TrainerUnreachableError | undefined;
      let busy = false;
      for (const { client, generation } of candidates) {
        const deadline: Deadline = { ms: Math.max(1, endsAt - Date.now()), limit: `${describeDuration(jobTimeoutMs)} (TRAINER_JOB_TIMEOUT_MS)` };
        try {
          return await use(client, deadline);
        } catch (error) {
          if (error instanceof TrainerTimeoutError) {
            if (this.local && generation !== null) await this.local.restart(generation, error.message);
            throw error;
          }
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
      if (Date.now() + ALL_BUSY_PAUSE_MS >= endsAt) throw new TrainerTimeoutError(`no trainer was free within ${describeDuration(jobTimeoutMs)} (TRAINER_JOB_TIMEOUT_MS): ${this.describeTargets()} stayed busy`);
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
