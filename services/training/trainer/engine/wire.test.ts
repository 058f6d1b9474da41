// A job of any size goes to the trainer in messages far below gRPC's 4 MiB default limit: rows in
// batches, adapters in chunks, in the order the trainer reads them (spec, files, rows, end).
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { TrainRequestSchema } from "../../../../gen/srl/trainer/v1/trainer_pb.js";
import type { TrainerJob } from "./trainer-job.js";
import { jobRequests } from "./wire.js";

describe("the Train request stream", () => {
  it("splits a large RL batch and large adapters into small messages, in order", () => {
    const rows = Array.from({ length: 400 }, (_, r) => ({
      tokens: Array.from({ length: 5_000 }, (_, t) => (r * 7 + t) % 150_000),
      trained: Array.from({ length: 5_000 }, (_, t) => t > 100),
      samplerLogprobs: Array.from({ length: 5_000 }, (_, t) => (t > 100 ? -0.5 : null)),
      advantage: 1,
      weight: 1,
    }));
    const job: TrainerJob = {
      jobId: "big",
      baseModel: { name: "m", ggufPath: "/m.gguf", ggufSize: 1, source: "/m.gguf", trainWeights: "" },
      lora: { rank: 8, alpha: 16, targetModules: [], seed: 1 },
      loss: { kind: "sft" },
      optimizer: { weightDecay: 0, maxGradNorm: 1, beta1: 0.9, beta2: 0.99, eps: 1e-8 },
      rows,
      steps: rows.map((_, r) => ({ rows: [r], learningRate: 1e-5 })),
      previousAdapter: { format: "peft", files: { "adapter_model.safetensors": new Uint8Array(9 << 20), "adapter_config.json": new Uint8Array(300) } },
      referenceAdapter: null,
    };
    const kinds: string[] = [];
    let largest = 0;
    let sentRows = 0;
    let sentBytes = 0;
    for (const message of jobRequests(job)) {
      largest = Math.max(largest, toBinary(TrainRequestSchema, create(TrainRequestSchema, { message })).length);
      kinds.push(message.case!);
      if (message.case === "rows") sentRows += message.value.rows.length;
      if (message.case === "file") sentBytes += message.value.data.length;
    }
    expect(largest).toBeLessThan(2 << 20);
    expect(sentRows).toBe(400);
    expect(sentBytes).toBe((9 << 20) + 300);
    expect(kinds[0]).toBe("spec");
    expect(kinds[kinds.length - 1]).toBe("end");
    expect(kinds.lastIndexOf("file")).toBeLessThan(kinds.indexOf("rows"));
  });

  it("sends an RL job's logprob_calculation_chunk_size as the trainer's logits chunk", () => {
    const job: TrainerJob = {
      jobId: "chunked",
      baseModel: { name: "m", ggufPath: "/m.gguf", ggufSize: 1, source: "/m.gguf", trainWeights: "" },
      lora: { rank: 8, alpha: 16, targetModules: [], seed: 1 },
      loss: { kind: "sft" },
      optimizer: { weightDecay: 0, maxGradNorm: 1, beta1: 0.9, beta2: 0.99, eps: 1e-8 },
      rows: [],
      steps: [],
      previousAdapter: null,
      referenceAdapter: null,
    };
    const specOf = (j: TrainerJob) => {
      const first = jobRequests(j).next().value;
      if (first?.case !== "spec") throw new Error("the stream must open with the spec");
      return first.value;
    };
    expect(specOf({ ...job, logitsChunkTokens: 512 }).resources?.logitsChunkTokens).toBe(512);
    expect(specOf(job).resources).toBeUndefined();
  });
});
