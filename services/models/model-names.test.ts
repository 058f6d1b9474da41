// Model names as `model` accepts them, Tinker's paths included (parsed as the Tinker SDK's
// ParsedCheckpointTinkerPath reads them: exactly three parts, a known kind).
import { describe, expect, it } from "vitest";
import { parseModelName, parseTinkerPath } from "./model-names.js";

const noBase = () => false;

describe("parseModelName", () => {
  it("reads tinker://{run}/sampler_weights/{name} as a sampler checkpoint of that run", () => {
    expect(parseModelName("tinker://5b3c-11/sampler_weights/000003", noBase)).toEqual({
      kind: "tinker",
      trainingRunId: "5b3c-11",
      checkpointType: "sampler",
      checkpointId: "sampler_weights/000003",
    });
    expect(parseModelName("  tinker://run/sampler_weights/final ", noBase)).toMatchObject({ kind: "tinker", trainingRunId: "run", checkpointId: "sampler_weights/final" });
  });

  it("reads the training-state and external kinds too (the resolver refuses them)", () => {
    expect(parseTinkerPath("tinker://run/weights/0001")).toEqual({ kind: "tinker", trainingRunId: "run", checkpointType: "training", checkpointId: "weights/0001" });
    expect(parseTinkerPath("tinker://run/external_weights/x")).toMatchObject({ checkpointType: "external", checkpointId: "external_weights/x" });
  });

  it("leaves malformed tinker paths to the base-model lookup (an unknown model, 404)", () => {
    for (const name of ["tinker://run/sampler_weights", "tinker://run/sampler_weights/a/b", "tinker://run/other/x", "tinker:///sampler_weights/x", "tinker://run/sampler_weights/", "tinker://run/constructor/x"]) {
      expect(parseTinkerPath(name), name).toBeNull();
      expect(parseModelName(name, noBase), name).toEqual({ kind: "base", name });
    }
  });

  it("keeps the other forms as they were", () => {
    expect(parseModelName("wandb-artifact:///acme/demo/agent:step3", noBase)).toEqual({ kind: "registered", entity: "acme", project: "demo", name: "agent", step: 3 });
    expect(parseModelName("demo/agent", noBase)).toEqual({ kind: "registered", entity: null, project: "demo", name: "agent", step: "latest" });
    expect(parseModelName("tiny-chat", (n) => n === "tiny-chat")).toEqual({ kind: "base", name: "tiny-chat" });
    // A catalog name wins over every other reading.
    expect(parseModelName("tinker://run/sampler_weights/x", () => true)).toEqual({ kind: "base", name: "tinker://run/sampler_weights/x" });
  });
});
