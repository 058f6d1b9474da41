// What chat and legacy completion requests share on their way to the engine: the sampling,
// stopping and scheduling options both request types carry. Options this engine cannot honour are
// refused with a 400 naming the field; only true no-ops (user, length_penalty without beam search,
// the sampling knobs under beam search) pass silently.
import type { ChatCompletionRequest } from "../../../gen/srl/v1/inference_pb.js";
import { badRequest } from "../../core/errors.js";
import type { GenerateRequest } from "../engine/protocol.js";
import type { ServeTarget } from "./resolve-model.js";

/** The request fields chat and legacy completions share (both generated request types have them). */
export type SharedFields = Pick<
  ChatCompletionRequest,
  | "n" | "seed" | "temperature" | "topP" | "topK" | "minP" | "frequencyPenalty" | "presencePenalty" | "repetitionPenalty"
  | "logitBias" | "badWords" | "allowedTokenIds" | "stop" | "stopTokenIds" | "includeStopStrInOutput" | "ignoreEos" | "minTokens"
  | "skipSpecialTokens" | "spacesBetweenSpecialTokens" | "priority" | "truncatePromptTokens" | "cacheSalt" | "promptLogprobs"
  | "returnTokensAsTokenIds" | "returnTokenIds" | "repetitionDetection" | "useBeamSearch" | "lengthPenalty" | "kvTransferParams" | "vllmXargs" | "streamOptions"
>;

/** What a chat request and a legacy completion request run the same way. */
export type SharedPlan = Omit<
  GenerateRequest,
  "id" | "rawPrompt" | "messages" | "tools" | "documents" | "chatTemplate" | "chatTemplateKwargs" | "addGenerationPrompt" | "continueFinalMessage" | "echo" | "addSpecialTokens" | "logprobs" | "topLogprobs"
>;

export function planShared(request: SharedFields, target: ServeTarget, streaming: boolean, grammar: string | null, maxTokens: number | null): SharedPlan {
  refuseUnsupported(request, streaming);
  if (maxTokens !== null && maxTokens > 0 && maxTokens < (request.minTokens ?? 0)) throw badRequest("min_tokens must not exceed max_tokens");
  const temperature = request.temperature ?? 1;
  if (temperature < 0) throw badRequest("temperature must be >= 0");
  const topP = request.topP ?? null;
  if (topP !== null && (topP <= 0 || topP > 1)) throw badRequest("top_p must be in (0, 1]");
  return {
    base: { name: target.base.name, source: target.base.source, scheduling: target.base.scheduling },
    tenant: target.entity,
    adapterPath: target.adapterPath,
    priority: request.priority ?? 0,
    truncatePromptTokens: request.truncatePromptTokens === undefined ? null : Number(request.truncatePromptTokens),
    cacheSalt: request.cacheSalt ?? null,
    n: request.n ?? 1,
    beamSearch: beamSearch(request, grammar),
    maxTokens,
    minTokens: request.minTokens ?? 0,
    sampling: {
      temperature,
      topP,
      topK: request.topK ?? null,
      minP: request.minP ?? null,
      seed: request.seed === undefined ? null : foldSeed(request.seed),
      frequencyPenalty: request.frequencyPenalty ?? 0,
      presencePenalty: request.presencePenalty ?? 0,
      repetitionPenalty: request.repetitionPenalty ?? null,
    },
    logitBias: logitBias(request.logitBias),
    badWords: request.badWords,
    allowedTokenIds: request.allowedTokenIds.length > 0 ? request.allowedTokenIds : null,
    stop: request.stop,
    stopTokenIds: request.stopTokenIds,
    includeStopStrInOutput: request.includeStopStrInOutput ?? false,
    ignoreEos: request.ignoreEos ?? false,
    skipSpecialTokens: request.skipSpecialTokens ?? true,
    spacesBetweenSpecialTokens: request.spacesBetweenSpecialTokens ?? true,
    repetitionDetection: repetitionDetection(request),
    grammar,
    promptLogprobs: request.promptLogprobs ?? null,
    returnTokensAsTokenIds: request.returnTokensAsTokenIds ?? false,
    returnTokenIds: request.returnTokenIds ?? false,
  };
}

function refuseUnsupported(request: SharedFields, streaming: boolean): void {
  const refuse = (field: string, why: string) => {
    throw badRequest(`${field}: ${why}`);
  };
  if (request.kvTransferParams && Object.keys(request.kvTransferParams).length > 0) refuse("kv_transfer_params", "disaggregated serving is not available here");
  if (request.vllmXargs && Object.keys(request.vllmXargs).length > 0) refuse("vllm_xargs", "this engine has no custom extensions");
  if (request.streamOptions && !streaming) refuse("stream_options", "only allowed with stream: true");
  if (streaming && request.promptLogprobs !== undefined) refuse("prompt_logprobs", "not available with stream: true");
}

/**
 * use_beam_search: n beams scored by raw log-probabilities (vLLM), so temperature, top_p, top_k,
 * min_p and seed have nothing to act on and pass. What would change which sequences may come or
 * how they score is refused rather than silently dropped (vLLM's beam search drops it).
 */
function beamSearch(request: SharedFields, grammar: string | null): GenerateRequest["beamSearch"] {
  if (!request.useBeamSearch) return null;
  const refuse = (field: string) => {
    throw badRequest(`${field}: not applied by beam search (use_beam_search ranks beams by the model's own log-probabilities); remove it or sample instead`);
  };
  if (grammar !== null) refuse("structured outputs and forced tool calls (tool_choice \"required\" or a named function)");
  if (Object.keys(request.logitBias).length > 0) refuse("logit_bias");
  if (request.badWords.length > 0) refuse("bad_words");
  if (request.allowedTokenIds.length > 0) refuse("allowed_token_ids");
  if ((request.frequencyPenalty ?? 0) !== 0) refuse("frequency_penalty");
  if ((request.presencePenalty ?? 0) !== 0) refuse("presence_penalty");
  if ((request.repetitionPenalty ?? 1) !== 1) refuse("repetition_penalty");
  const lengthPenalty = request.lengthPenalty ?? 1;
  if (!Number.isFinite(lengthPenalty)) throw badRequest("length_penalty must be a finite number");
  return { lengthPenalty };
}

function logitBias(bias: { [key: string]: number }): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [token, value] of Object.entries(bias)) {
    if (!/^\d+$/.test(token)) throw badRequest(`logit_bias: keys are token ids, got "${token}"`);
    if (value < -100 || value > 100) throw badRequest(`logit_bias: values must be between -100 and 100, got ${value} for token ${token}`);
    out[token] = value;
  }
  return out;
}

/** vLLM's rule: on when max_pattern_size > 0 and min_count >= 2; min_pattern_size defaults to 1. */
function repetitionDetection(request: Pick<SharedFields, "repetitionDetection">): GenerateRequest["repetitionDetection"] {
  const settings = request.repetitionDetection;
  if (!settings) return null;
  const max = settings.maxPatternSize ?? 0;
  const min = Math.max(1, settings.minPatternSize ?? 1);
  const count = settings.minCount ?? 0;
  if (max <= 0 || count < 2) return null;
  if (min > max) throw badRequest(`repetition_detection: min_pattern_size (${min}) exceeds max_pattern_size (${max})`);
  if (max > 1024) throw badRequest("repetition_detection: max_pattern_size must be at most 1024");
  return { minPatternSize: min, maxPatternSize: max, minCount: count };
}

/** llama.cpp takes a 32-bit seed; a request's 64-bit seed is folded into it. */
export function foldSeed(seed: bigint): number {
  return Number(BigInt.asUintN(32, seed ^ (seed >> 32n)));
}
