// A future as retrieve_future answers it: 408's try_again while it waits or runs, the failure,
// 410 once its result has expired, else the typed result (the SDK's protobuf types as stored).
import { create, fromBinary, fromJson, type JsonValue } from "@bufbuild/protobuf";
import {
  CreateModelResponseSchema,
  LoadWeightsResponseSchema,
  OptimStepResponseSchema,
  type RetrieveFutureResponse,
  SaveWeightsExternalResponseSchema,
  SaveWeightsForSamplerResponseSchema,
  SaveWeightsResponseSchema,
  TryAgainResponseSchema,
  UnloadModelResponseSchema,
} from "../../gen/srl/tinker/v1/tinker_pb.js";
import { ForwardBackwardOutputSchema, SampleResponseSchema } from "../../gen/tinker/tinker_public_pb.js";
import type { FutureRecord, Futures } from "./futures.js";

export async function futureResult(futures: Futures, record: FutureRecord): Promise<RetrieveFutureResponse["result"]> {
  switch (record.state) {
    case "pending":
    case "running":
      return { case: "tryAgain", value: create(TryAgainResponseSchema, { type: "try_again", requestId: record._id, queueState: "active", ...(record.state === "pending" ? { queueStateReason: "waiting for the training client's earlier requests" } : {}) }) };
    case "failed":
    case "cancelled":
      return { case: "failed", value: { $typeName: "srl.tinker.v1.RequestFailedResponse", error: record.error ?? "failed", category: record.category ?? "unknown" } };
    case "expired":
      return { case: "gone", value: { $typeName: "srl.tinker.v1.RequestFailedResponse", error: `the result of ${record._id} has expired`, category: "user" } };
    case "done":
      break;
  }
  const result = await futures.resultOf(record);
  if (!result) return { case: "gone", value: { $typeName: "srl.tinker.v1.RequestFailedResponse", error: `the result of ${record._id} is no longer stored`, category: "server" } };
  if ("bytes" in result) {
    if (record.kind === "sample") return { case: "sample", value: fromBinary(SampleResponseSchema, result.bytes) };
    return { case: "forwardBackward", value: fromBinary(ForwardBackwardOutputSchema, result.bytes) };
  }
  const json = result.json as JsonValue;
  const options = { ignoreUnknownFields: true };
  switch (record.kind) {
    case "create_model":
      return { case: "createModel", value: fromJson(CreateModelResponseSchema, json, options) };
    case "optim_step":
      return { case: "optimStep", value: fromJson(OptimStepResponseSchema, json, options) };
    case "save_weights":
      return { case: "saveWeights", value: fromJson(SaveWeightsResponseSchema, json, options) };
    case "load_weights":
      return { case: "loadWeights", value: fromJson(LoadWeightsResponseSchema, json, options) };
    case "save_weights_for_sampler":
      return { case: "saveWeightsForSampler", value: fromJson(SaveWeightsForSamplerResponseSchema, json, options) };
    case "unload_model":
      return { case: "unloadModel", value: fromJson(UnloadModelResponseSchema, json, options) };
    case "save_weights_external":
      return { case: "saveWeightsExternal", value: fromJson(SaveWeightsExternalResponseSchema, json, options) };
    default:
      throw new Error(`a ${record.kind} future holds JSON`);
  }
}
