import { describe, expect, it } from "vitest";
import { TrainingInputError } from "../api.js";
import { planSft } from "./config.js";

describe("planSft", () => {
  it("defaults to batch_size auto = 2 and learning rate 5e-5, consecutive batches", () => {
    expect(planSft(undefined, 5)).toEqual({ batchSize: 2, learningRates: [5e-5, 5e-5, 5e-5], batches: [[0, 2], [2, 4], [4, 5]], assistantTurns: "all" });
    expect(planSft({ batch_size: "auto", learning_rate: 1e-4 }, 1).learningRates).toEqual([1e-4]);
  });

  it("takes one learning rate per batch from a list, and refuses a short list", () => {
    expect(planSft({ batch_size: 3, learning_rate: [1, 2, 3] }, 4).learningRates).toEqual([1, 2]);
    expect(() => planSft({ batch_size: 1, learning_rate: [1e-4] }, 2)).toThrow(TrainingInputError);
    expect(() => planSft({ batch_size: 0 }, 2)).toThrow(TrainingInputError);
    expect(() => planSft({ learning_rate: "fast" }, 2)).toThrow(TrainingInputError);
  });

  it("reads assistant_turns (ART 0.5.23 always sends it)", () => {
    expect(planSft({ assistant_turns: "last" }, 1).assistantTurns).toBe("last");
    expect(planSft({ assistant_turns: null }, 1).assistantTurns).toBe("all");
    expect(() => planSft({ assistant_turns: "first" }, 1)).toThrow(/assistant_turns must be "all" or "last"/);
  });
});
