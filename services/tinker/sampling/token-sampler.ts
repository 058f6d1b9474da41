// Token-level sampling for Tinker's `asample` (and `compute_logprobs`, which is an asample with
// max_tokens 1 and prompt logprobs): a prompt of token ids in, sampled token ids with their
// log-probabilities out, on the same engines, model names, admission and limits as
// /v1/completions. A sample is one engine generation of the caller's entity (n = num_samples, a
// token-id prompt, logprobs with top-k as token ids, vLLM-style prompt_logprobs), so it takes
// its turn with everyone's chat and completion requests.
//
// What Tinker's SDK and tinker-cookbook expect of a sampled sequence, and so what this returns:
// - `tokens` ends with the token that stopped it: the end-of-sequence token (stop=None), or the
//   stop token (stop=[ids]); the cookbook's renderers split a response on it
//   (parse_response_for_stop_token counts it; RoleColonRenderer strips a trailing EOS). Its
//   log-probability is in `logprobs` (training pairs tokens and logprobs one to one).
// - A stop string ends the sequence with the token that completes it: every generated token is
//   kept, the string's tokens included (RoleColonRenderer splits the decoded text on it). Strings
//   are matched on the decoded text with special tokens spelled out.
// - stop=None: the model's end-of-generation tokens stop; stop=[] (kind "none"): nothing stops but
//   max_tokens and the context's end, the end-of-generation tokens are sampled like any other;
//   stop strings or stop token ids: those, and the end-of-generation tokens too (as in vLLM).
// - max_tokens null: up to the context's end ("length"); a max_tokens past the context's end is
//   cut there, as /v1/completions does.
// - `logprobs` are the raw model's (before temperature, top_k, top_p), as vLLM and Tinker report.
import { ApiError, badRequest, unavailable } from "../../core/errors.js";
import {
  checkPromptBytes,
  type EngineEvent,
  foldSeed,
  type GenerateRequest,
  type InferenceEngine,
  type ModelResolver,
  type PromptLogprobOut,
  type RequestLimits,
  type ServeTarget,
  TOKEN_ID_BYTES,
  type TokenLogprobOut,
} from "../../inference/index.js";

export interface TokenSampleRequest {
  /** The caller's entity (model names resolve only to its models). */
  entity: string;
  /** As /v1/completions' `model`: a base model name, or `tinker://{training_run_id}/sampler_weights/{name}`. */
  model: string;
  /** Token ids. */
  prompt: number[];
  /** 1..64. */
  numSamples: number;
  /** null: up to the context's end. */
  maxTokens: number | null;
  temperature: number;
  /** -1 or 0: no limit. */
  topK: number;
  topP: number;
  seed: number | null;
  stop: { kind: "eos" } | { kind: "none" } | { kind: "strings"; values: string[] } | { kind: "tokens"; values: number[] };
  promptLogprobs: boolean;
  topkPromptLogprobs: number;
  topkSampleLogprobs: number;
  promptLogprobsLastN: number | null;
  signal: AbortSignal;
}

export interface SampledTokens {
  tokens: number[];
  logprobs: number[];
  stopReason: "stop" | "length";
  /** Per sampled token, its k most likely tokens (highest first); null unless topkSampleLogprobs > 0. */
  topk: { ids: number[][]; logprobs: number[][] } | null;
}

export interface TokenSampleResult {
  sequences: SampledTokens[];
  /** One per prompt token, null where not computed (the first; before the last N). */
  promptLogprobs: (number | null)[] | null;
  topkPromptLogprobs: ({ ids: number[]; logprobs: number[] } | null)[] | null;
  /** Prompt tokens the engine reused from its cache for the first sample (Tinker's prompt_cache_hit_tokens). */
  promptCacheHitTokens: number;
}

export interface TokenSamplerDeps {
  /** The inference service's engines (EngineSet): each entity's generation limit applies. */
  engine: InferenceEngine;
  resolver: ModelResolver;
  /** The same bounds as the OpenAI routes: prompt bytes, and the choices one engine request may run. */
  limits: RequestLimits;
}

/** Bounds of a sample request (the contract's own: num_samples <= 64, top-k <= 20). */
const MAX_SAMPLES = 64;
const MAX_TOPK = 20;

/** The seed of the request whose first choice is sample `first`: choice i of it draws as sample first + i. */
function chunkSeed(seed: number, first: number): number {
  return (seed + first * 1_000_003) >>> 0;
}

export class TokenSampler {
  constructor(private readonly deps: TokenSamplerDeps) {}

  async sample(request: TokenSampleRequest): Promise<TokenSampleResult> {
    check(request);
    checkPromptBytes(request.prompt.length * TOKEN_ID_BYTES, "prompt", this.deps.limits);
    const target = await this.deps.resolver.resolve(request.entity, request.model);
    const wantPrompt = request.promptLogprobs || request.topkPromptLogprobs > 0;
    // More samples than the engine runs at once for one request: consecutive requests, each
    // seeded so that sample i draws exactly as it would in one request of all of them.
    const perRequest = Math.max(1, this.deps.limits.maxChoices(target.base.name) ?? request.numSamples);
    // As the OpenAI routes fold it: the same seed draws the same there and here.
    const seed = request.seed === null ? null : foldSeed(BigInt.asIntN(64, BigInt(Math.trunc(request.seed))));
    const sequences: SampledTokens[] = [];
    let prompt: { ids: number[]; logprobs: PromptLogprobOut[] | null } | null = null;
    let cached = 0;
    for (let first = 0; first < request.numSamples; first += perRequest) {
      const n = Math.min(perRequest, request.numSamples - first);
      const plan = planOf(request, target, n, seed === null ? null : chunkSeed(seed, first), first === 0 && wantPrompt);
      const run = await collect(this.deps.engine.generate(plan, request.signal), n, request.signal);
      if (first === 0) {
        prompt = run.prompt;
        cached = run.cachedTokens;
      }
      sequences.push(...run.choices.map((choice) => sequenceOf(choice, request.topkSampleLogprobs)));
    }
    if (!prompt) throw unavailable("the engine did not start the sample");
    return {
      sequences,
      promptLogprobs: request.promptLogprobs ? promptLogprobsOf(prompt, request.promptLogprobsLastN) : null,
      topkPromptLogprobs: request.topkPromptLogprobs > 0 ? topkPromptOf(prompt, request.topkPromptLogprobs, request.promptLogprobsLastN) : null,
      // The prompt-logprobs pass evaluates the whole prompt afresh: nothing of it came from the cache.
      promptCacheHitTokens: wantPrompt ? 0 : cached,
    };
  }
}

/** What the contract cannot state: the values the engine would misread. */
function check(request: TokenSampleRequest): void {
  const integer = (value: number, field: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
    if (!Number.isInteger(value) || value < min || value > max) throw badRequest(`${field} must be an integer in [${min}, ${max}], got ${value}`);
  };
  integer(request.numSamples, "num_samples", 1, MAX_SAMPLES);
  if (request.prompt.length === 0) throw badRequest("prompt: the prompt has no tokens");
  const bad = request.prompt.find((id) => !Number.isInteger(id) || id < 0);
  if (bad !== undefined) throw badRequest(`prompt: ${bad} is not a token id`);
  if (request.maxTokens !== null) integer(request.maxTokens, "max_tokens", 0);
  if (!Number.isFinite(request.temperature) || request.temperature < 0) throw badRequest(`temperature must be >= 0, got ${request.temperature}`);
  if (!Number.isInteger(request.topK) || request.topK < -1) throw badRequest(`top_k must be -1 (no limit), 0 (no limit) or a positive integer, got ${request.topK}`);
  if (!(request.topP > 0 && request.topP <= 1)) throw badRequest(`top_p must be in (0, 1], got ${request.topP}`);
  if (request.seed !== null && !Number.isInteger(request.seed)) throw badRequest(`seed must be an integer, got ${request.seed}`);
  integer(request.topkPromptLogprobs, "topk_prompt_logprobs", 0, MAX_TOPK);
  integer(request.topkSampleLogprobs, "topk_sample_logprobs", 0, MAX_TOPK);
  if (request.promptLogprobsLastN !== null) {
    if (!request.promptLogprobs) throw badRequest("prompt_logprobs_last_n applies to prompt logprobs; set prompt_logprobs");
    integer(request.promptLogprobsLastN, "prompt_logprobs_last_n", 1, Math.max(1, request.prompt.length - 1));
    if (request.prompt.length < 2) throw badRequest("prompt_logprobs_last_n: a one-token prompt has no token to score");
  }
  const stop = request.stop;
  if (stop.kind === "strings" && stop.values.some((value) => value.length === 0)) throw badRequest("stop: a stop string must not be empty");
  if (stop.kind === "tokens") {
    const wrong = stop.values.find((id) => !Number.isInteger(id) || id < 0);
    if (wrong !== undefined) throw badRequest(`stop: ${wrong} is not a token id`);
  }
}

/** One engine request: n choices of the prompt, log-probabilities as token ids. */
function planOf(request: TokenSampleRequest, target: ServeTarget, n: number, seed: number | null, promptPass: boolean): Omit<GenerateRequest, "id"> {
  const stop = request.stop;
  return {
    base: { name: target.base.name, source: target.base.source, scheduling: target.base.scheduling },
    tenant: target.entity,
    adapterPath: target.adapterPath,
    priority: 0,
    rawPrompt: { tokenIds: request.prompt },
    messages: [],
    tools: null,
    documents: null,
    chatTemplate: null,
    chatTemplateKwargs: {},
    addGenerationPrompt: false,
    continueFinalMessage: false,
    echo: false,
    addSpecialTokens: false,
    truncatePromptTokens: null,
    cacheSalt: null,
    n,
    beamSearch: null,
    maxTokens: request.maxTokens,
    minTokens: 0,
    sampling: {
      temperature: request.temperature,
      topP: request.topP < 1 ? request.topP : null,
      topK: request.topK > 0 ? request.topK : null,
      minP: null,
      seed,
      frequencyPenalty: 0,
      presencePenalty: 0,
      repetitionPenalty: null,
    },
    logitBias: {},
    badWords: [],
    allowedTokenIds: null,
    stop: stop.kind === "strings" ? stop.values : [],
    stopTokenIds: stop.kind === "tokens" ? stop.values : [],
    includeStopStrInOutput: false,
    includeStopToken: true,
    ignoreEos: stop.kind === "none",
    // Stop strings are matched on the text with special tokens spelled out (a stop string
    // "<|im_start|>" stops at that token); the text itself is not returned.
    skipSpecialTokens: false,
    spacesBetweenSpecialTokens: false,
    grammar: null,
    repetitionDetection: null,
    logprobs: true,
    topLogprobs: request.topkSampleLogprobs,
    promptLogprobs: promptPass ? (request.topkPromptLogprobs > 0 ? request.topkPromptLogprobs : 0) : null,
    returnTokensAsTokenIds: true,
    returnTokenIds: true,
  };
}

interface ChoiceOutput {
  tokens: number[];
  logprobs: TokenLogprobOut[];
  finish: "stop" | "length" | null;
}

/** An engine request's events -> its prompt pass and each choice's tokens, once `done` came. */
async function collect(events: AsyncGenerator<EngineEvent>, n: number, signal: AbortSignal) {
  const choices: ChoiceOutput[] = Array.from({ length: n }, () => ({ tokens: [], logprobs: [], finish: null }));
  let prompt: { ids: number[]; logprobs: PromptLogprobOut[] | null } | null = null;
  let cachedTokens = 0;
  let done = false;
  for await (const event of events) {
    if (event.type === "started") prompt = { ids: event.promptTokenIds, logprobs: event.promptLogprobs };
    else if (event.type === "delta") {
      const choice = choices[event.choice];
      if (!choice) continue;
      choice.tokens.push(...event.tokenIds);
      choice.logprobs.push(...event.logprobs);
    } else if (event.type === "finished") {
      const choice = choices[event.choice];
      if (choice) choice.finish = event.finishReason;
    } else if (event.type === "done") {
      cachedTokens = event.usage.cachedTokens;
      done = true;
    }
  }
  // The engines end a cancelled generation quietly, with what it had so far: never a result.
  if (signal.aborted) throw new ApiError("cancelled", "the sample was cancelled");
  if (!done || !prompt || choices.some((choice) => choice.finish === null)) throw unavailable("the engine ended the sample before it was done; retry");
  return { prompt, choices, cachedTokens };
}

/** `token_id:{id}` (return_tokens_as_token_ids) -> the id. */
function idOf(token: string): number {
  const match = /^token_id:(\d+)$/.exec(token);
  if (!match) throw unavailable(`the engine reported a log-probability's token as text ("${token}"), not as a token id; top-k log-probabilities are not available from it`);
  return Number(match[1]);
}

function sequenceOf(choice: ChoiceOutput, topk: number): SampledTokens {
  if (choice.logprobs.length !== choice.tokens.length) {
    throw unavailable(`the engine reported ${choice.logprobs.length} log-probabilities for ${choice.tokens.length} sampled tokens`);
  }
  return {
    tokens: choice.tokens,
    logprobs: choice.logprobs.map((item) => item.logprob),
    stopReason: choice.finish as "stop" | "length",
    topk:
      topk > 0
        ? {
            ids: choice.logprobs.map((item) => item.top_logprobs.slice(0, topk).map((alternative) => idOf(alternative.token))),
            logprobs: choice.logprobs.map((item) => item.top_logprobs.slice(0, topk).map((alternative) => alternative.logprob)),
          }
        : null,
  };
}

/** Prompt positions that are scored: all but the first, or the last N. */
function scoredFrom(length: number, lastN: number | null): number {
  return lastN === null ? 1 : Math.max(1, length - lastN);
}

function promptLogprobsOf(prompt: { ids: number[]; logprobs: PromptLogprobOut[] | null }, lastN: number | null): (number | null)[] {
  const entries = requirePromptLogprobs(prompt);
  const from = scoredFrom(prompt.ids.length, lastN);
  return prompt.ids.map((id, index) => {
    if (index < from) return null;
    const own = entries[index]?.[String(id)];
    if (!own) throw unavailable(`the engine reported no log-probability for prompt token ${index}`);
    return own.logprob;
  });
}

/** Each scored position's k most likely tokens by rank (ties: the lower token id first, as the engine ranks them). */
function topkPromptOf(prompt: { ids: number[]; logprobs: PromptLogprobOut[] | null }, k: number, lastN: number | null): ({ ids: number[]; logprobs: number[] } | null)[] {
  const entries = requirePromptLogprobs(prompt);
  const from = scoredFrom(prompt.ids.length, lastN);
  return prompt.ids.map((_, index) => {
    const entry = entries[index];
    if (index < from || !entry) return null;
    const ranked = Object.entries(entry)
      .filter(([, item]) => item.rank <= k)
      .sort((a, b) => a[1].rank - b[1].rank);
    return { ids: ranked.map(([id]) => Number(id)), logprobs: ranked.map(([, item]) => item.logprob) };
  });
}

function requirePromptLogprobs(prompt: { ids: number[]; logprobs: PromptLogprobOut[] | null }): PromptLogprobOut[] {
  if (!prompt.logprobs || prompt.logprobs.length !== prompt.ids.length) throw unavailable("the engine did not report the prompt's log-probabilities");
  return prompt.logprobs;
}
