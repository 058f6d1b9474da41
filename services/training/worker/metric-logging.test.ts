import type { JsonObject } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { gradientStepRow, metricLoggingOf } from "./metric-logging.js";

describe("metricLoggingOf (SFT config.metric_logging)", () => {
  it("logs the averages at the checkpoint step when absent (older clients, RL jobs)", () => {
    const configs: JsonObject[] = [{}, { config: null }, { config: { batch_size: 2 } }, { config: { metric_logging: null } }];
    for (const config of configs) {
      const logging = metricLoggingOf(config);
      expect([logging.averages, logging.gradientSteps, logging.step(4)]).toEqual([true, false, 4]);
    }
  });

  it("logs nothing when disabled, and averages plus every gradient step at the target step when enabled (ART 0.5.23)", () => {
    const off = metricLoggingOf({ config: { metric_logging: { enabled: false, target_training_step: 9 } } });
    expect([off.averages, off.gradientSteps]).toEqual([false, false]);
    const on = metricLoggingOf({ config: { metric_logging: { enabled: true, target_training_step: 9 } } });
    expect([on.averages, on.gradientSteps, on.step(4)]).toEqual([true, true, 9]);
    expect(metricLoggingOf({ config: { metric_logging: { enabled: true } } }).step(4)).toBe(4);
  });

  it("names a gradient step's row as ART's SFT sample rows: every key under sft/", () => {
    expect(gradientStepRow(2, { gradient_step: 2, loss: 0.5, learning_rate: 1e-4 })).toEqual({ "sft/gradient_step": 2, "sft/loss": 0.5, "sft/learning_rate": 1e-4 });
  });
});
