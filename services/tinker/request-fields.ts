// The SDK's request fields as the service's settings: what unset means (the SDK's own defaults),
// the shapes `stop` may take, optional numbers and metadata maps.
import type { JsonObject } from "@bufbuild/protobuf";
import type { AdamParams, SamplingParams } from "../../gen/srl/tinker/v1/tinker_pb.js";
import { badRequest } from "../core/errors.js";
import type { AdamSettings } from "../training/index.js";
import type { TokenSampleRequest } from "./sampling/token-sampler.js";

/** The SDK's AdamParams defaults (tinker/types/optimizer.py) for what is unset. */
export function adamSettings(params: AdamParams | undefined): AdamSettings {
  return {
    learningRate: params?.learningRate ?? 1e-4,
    beta1: params?.beta1 ?? 0.9,
    beta2: params?.beta2 ?? 0.95,
    eps: params?.eps ?? 1e-12,
    weightDecay: params?.weightDecay ?? 0,
    gradClipNorm: params?.gradClipNorm ?? 0,
  };
}

export function stopOf(params: SamplingParams | undefined): TokenSampleRequest["stop"] {
  const stop = params?.stop;
  if (stop === undefined || stop.kind.case === "nullValue" || stop.kind.case === undefined) return { kind: "eos" };
  if (stop.kind.case === "stringValue") return { kind: "strings", values: [stop.kind.value] };
  if (stop.kind.case !== "listValue") throw badRequest("sampling_params.stop must be a string, a list of strings or a list of token ids");
  const items = stop.kind.value.values;
  if (items.length === 0) return { kind: "none" };
  if (items.every((v) => v.kind.case === "stringValue")) return { kind: "strings", values: items.map((v) => v.kind.value as string) };
  if (items.every((v) => v.kind.case === "numberValue" && Number.isInteger(v.kind.value) && v.kind.value >= 0)) return { kind: "tokens", values: items.map((v) => v.kind.value as number) };
  throw badRequest("sampling_params.stop must be a string, a list of strings or a list of token ids (not a mix)");
}

export function optionalNumber(value: bigint | undefined): number | null {
  return value === undefined ? null : Number(value);
}

export function stringMap(value: JsonObject | null): Record<string, string> {
  return Object.fromEntries(Object.entries(value ?? {}).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}
