// A token sample as Tinker's SampleResponse: token ids as int32 bytes, log-probabilities as float32
// bytes (NaN where the prompt has none), top-k as dense [n, k] matrices (tinker/proto/response_conv.py).
import { create, toBinary } from "@bufbuild/protobuf";
import { SampleResponseSchema, SampledSequenceSchema, StopReason, TopkLogprobsSchema } from "../../../gen/tinker/tinker_public_pb.js";
import type { TokenSampleResult } from "../sampling/token-sampler.js";
import { bytesOf } from "./bytes.js";

export function sampleResponse(result: TokenSampleResult): Uint8Array {
  const sequences = result.sequences.map((sequence) =>
    create(SampledSequenceSchema, {
      stopReason: sequence.stopReason === "length" ? StopReason.LENGTH : StopReason.STOP,
      tokens: bytesOf(Int32Array.from(sequence.tokens)),
      logprobs: bytesOf(Float32Array.from(sequence.logprobs)),
      ...(sequence.topk ? { topkSampledLogprobs: topk(sequence.topk.ids, sequence.topk.logprobs) } : {}),
    }),
  );
  const promptLogprobs = result.promptLogprobs ? bytesOf(Float32Array.from(result.promptLogprobs, (v) => (v === null ? NaN : v))) : undefined;
  const topkPrompt = result.topkPromptLogprobs ? topk(result.topkPromptLogprobs.map((p) => p?.ids ?? []), result.topkPromptLogprobs.map((p) => p?.logprobs ?? [])) : undefined;
  return toBinary(
    SampleResponseSchema,
    create(SampleResponseSchema, {
      sequences,
      ...(promptLogprobs ? { promptLogprobs } : {}),
      ...(topkPrompt ? { topkPromptLogprobs: topkPrompt } : {}),
    }),
  );
}

/** The SDK's filler for an empty top-k entry (tinker/types/topk_logprobs.py): id 0 with this log-prob. */
const MASK_LOGPROB = -99999.0;

/** Rows of up to k entries as dense [n, k] matrices, short rows filled with the SDK's sentinel (a row of sentinels reads as None). */
function topk(ids: readonly (readonly number[])[], logprobs: readonly (readonly number[])[]) {
  const k = Math.max(0, ...ids.map((row) => row.length));
  const n = ids.length;
  const idMatrix = new Int32Array(n * k).fill(0);
  const lpMatrix = new Float32Array(n * k).fill(MASK_LOGPROB);
  ids.forEach((row, r) => row.forEach((id, c) => (idMatrix[r * k + c] = id)));
  logprobs.forEach((row, r) => row.forEach((lp, c) => (lpMatrix[r * k + c] = lp)));
  return create(TopkLogprobsSchema, { tokenIds: bytesOf(idMatrix), logprobs: bytesOf(lpMatrix), k, length: n });
}
