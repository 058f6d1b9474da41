// Where an SFT job's metrics go in the model's run, from `config.metric_logging` (ART 0.5.23:
// `train_sft` sends `{enabled: true, target_training_step: step + 1}` and leaves the logging to
// the server; with `log_metrics=False` it sends nothing). Absent (older clients, and RL jobs): the
// job's averages at the new checkpoint's step, as before. `enabled: false`: nothing. `enabled:
// true`: the averages at `target_training_step`, and, as ART's own SFT loop logs them, one `sft`
// row per optimizer step with its `gradient_step`.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

export interface MetricLogging {
  /** Write the job's averaged metrics (split "train"). */
  averages: boolean;
  /** Write each optimizer step's metrics (split "sft", with sft/gradient_step). */
  gradientSteps: boolean;
  /** The run step the rows go to, given the checkpoint step the job made. */
  step(checkpointStep: number): number;
}

export function metricLoggingOf(jobConfig: JsonObject): MetricLogging {
  const logging = objectOrNull(objectOrNull(jobConfig.config)?.metric_logging);
  if (!logging) return { averages: true, gradientSteps: false, step: (s) => s };
  if (logging.enabled !== true) return { averages: false, gradientSteps: false, step: (s) => s };
  const target = logging.target_training_step;
  return { averages: true, gradientSteps: true, step: (s) => (typeof target === "number" && Number.isInteger(target) ? target : s) };
}

/** One optimizer step's metrics as ART names an SFT sample row: every key under "sft/". */
export function gradientStepRow(index: number, metrics: Record<string, number>): Record<string, number> {
  const { gradient_step: _reported, ...rest } = metrics;
  return Object.fromEntries([["sft/gradient_step", index], ...Object.entries(rest).map(([name, value]) => [`sft/${name}`, value] as const)]);
}

function objectOrNull(value: JsonValue | undefined): JsonObject | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : null;
}
