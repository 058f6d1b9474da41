// A job's progress as its events tell it: how many gradient steps of how many, each step's metrics,
// the job's totals, its throughput, and how it ended.
import type { JsonObject } from "@bufbuild/protobuf";
import type { TrainingJobEvent } from "../../../gen/srl/v1/events_pb.js";
import type { RunSeries } from "../chart.js";
import { orderMetricNames } from "../charts/order.js";

/**
 * What an RL job repeats on every gradient_step: its totals (prepare-rl.ts adds them to each step,
 * overriding the trainer's per-step num_trainable_tokens). Shown once, not charted. An SFT job's
 * num_trainable_tokens is the step's own, so it is charted.
 */
const RL_JOB_TOTALS = ["num_groups_submitted", "num_groups_trainable", "num_trajectories", "num_trainable_tokens", "num_gradient_steps"];

export interface StepRecord {
  step: number;
  metrics: Record<string, number>;
}

export class JobProgress {
  /** Gradient steps the job will take (training_started's num_sequences); 0 until it starts. */
  total = 0;
  started = false;
  readonly steps: StepRecord[] = [];
  readonly events: TrainingJobEvent[] = [];
  /** The job's totals as its steps reported them. */
  readonly totals: Record<string, number> = {};
  endedAtStep: number | null = null;
  failure: string | null = null;
  private readonly totalNames: ReadonlySet<string>;

  constructor(jobType: string) {
    this.totalNames = new Set(jobType === "rl" ? RL_JOB_TOTALS : []);
  }

  get lastEventId(): string | undefined {
    return this.events.at(-1)?.id;
  }

  get finished(): boolean {
    return this.endedAtStep !== null || this.failure !== null;
  }

  apply(event: TrainingJobEvent): void {
    this.events.push(event);
    const data: JsonObject = event.data ?? {};
    if (event.type === "training_started") {
      this.started = true;
      this.total = typeof data.num_sequences === "number" ? data.num_sequences : 0;
    } else if (event.type === "gradient_step") {
      const metrics: Record<string, number> = {};
      for (const [name, value] of Object.entries(data)) {
        if (typeof value !== "number" || !Number.isFinite(value)) continue;
        if (this.totalNames.has(name)) this.totals[name] = value;
        else if (name !== "gradient_step") metrics[name] = value;
      }
      const step = typeof data.gradient_step === "number" ? data.gradient_step : this.steps.length + 1;
      this.steps.push({ step, metrics });
    } else if (event.type === "training_ended") {
      this.endedAtStep = typeof data.step === "number" ? data.step : null;
    } else if (event.type === "training_failed") {
      this.failure = typeof data.error_message === "string" ? data.error_message : "the job failed";
    }
  }

  /** The per-step metric names, in the charts' order. */
  metricNames(): string[] {
    return orderMetricNames(new Set(this.steps.flatMap((step) => Object.keys(step.metrics))));
  }

  /** Metric name → this job's series over gradient steps. */
  series(label: string): Map<string, RunSeries[]> {
    const out = new Map<string, RunSeries[]>();
    for (const name of this.metricNames()) {
      const points = this.steps.flatMap((step) => {
        const value = step.metrics[name];
        return value === undefined ? [] : [{ step: step.step, value }];
      });
      out.set(name, [{ label, points }]);
    }
    return out;
  }

  /**
   * Tokens per second of the trainer's own time, from the steps that report `num_tokens` (all the
   * tokens of the step's rows) and `tokens_per_second` (over the step's time): the tokens over the
   * summed step times, so the job's preparation and checkpoint writing are not counted. Null when
   * the events carry no token counts.
   */
  throughput(): { tokensPerSecond: number; tokens: number; seconds: number } | null {
    let tokens = 0;
    let seconds = 0;
    for (const { metrics } of this.steps) {
      const count = metrics.num_tokens;
      const rate = metrics.tokens_per_second;
      if (count === undefined || rate === undefined || !(count > 0) || !(rate > 0)) continue;
      tokens += count;
      seconds += count / rate;
    }
    return seconds > 0 ? { tokensPerSecond: tokens / seconds, tokens, seconds } : null;
  }
}
