// Messages between the gateway and the engine child process (structured-clone IPC). The engine
// runs llama.cpp in its own process: a native abort there must not take the gateway down, and its
// thread pool is sized for llama.cpp alone.
import type { JsonObject } from "@bufbuild/protobuf";
import type { LogLevel } from "../../core/logger.js";

/** Which llama.cpp binary the engine loads: "auto", the install's checked build (else the prebuilt one), or "prebuilt". */
export type BinaryChoice = "auto" | "prebuilt";

/** Test only (ENGINE_FAULT_INJECTION): the engine process dies of `signal` when it starts generating for `model`. */
export interface EngineFault {
  model: string;
  signal: NodeJS.Signals;
  /** Only on this binary ("localBuild" or "prebuilt"); null: on either. */
  build: "localBuild" | "prebuilt" | null;
}

export interface EngineSettings {
  threads: number;
  sequences: number;
  /** Cap on each model's context per sequence (ENGINE_CONTEXT_SIZE); 0: the model's trained length. */
  contextSize: number;
  maxQueue: number;
  /** Places in a model's queue one entity may hold; 0: the whole queue (ENGINE_MAX_QUEUE_PER_ENTITY). */
  maxQueuePerEntity: number;
  /** Sequences of a context one entity may hold; 0: all, or all but one while others use the model (ENGINE_MAX_SEQUENCES_PER_ENTITY). */
  maxSequencesPerEntity: number;
  maxContexts: number;
  /** Estimated memory of all contexts (KV caches, compute buffers, adapters) before LRU eviction. */
  contextMemoryBytes: number;
  logLevel: LogLevel;
  dataDir: string;
  hubTimeoutMs: number;
  /** ENGINE_BINARY; the client moves "auto" to "prebuilt" when the local build keeps crashing. */
  binary: BinaryChoice;
  faults: EngineFault[];
  /** Niceness of the engine process (ENGINE_NICE); 0: the gateway's. */
  nice?: number;
}

export interface BaseModelRef {
  name: string;
  source: string;
  scheduling: "fcfs" | "priority";
}

export interface SamplingSettings {
  temperature: number;
  topP: number | null;
  topK: number | null;
  minP: number | null;
  seed: number | null;
  frequencyPenalty: number;
  presencePenalty: number;
  repetitionPenalty: number | null;
}

export interface GenerateRequest {
  id: string;
  base: BaseModelRef;
  /** The entity it runs for: admission takes turns between entities (engine/fair-queue.ts). */
  tenant: string;
  adapterPath: string | null;
  priority: number;
  /** A legacy completion's prompt, used as it is (no chat template); null for chat. */
  rawPrompt: { text: string } | { tokenIds: number[] } | null;
  // Prompt construction (the engine owns the tokenizer and the model's chat template).
  messages: JsonObject[];
  tools: JsonObject[] | null;
  documents: JsonObject[] | null;
  chatTemplate: string | null;
  chatTemplateKwargs: JsonObject;
  addGenerationPrompt: boolean;
  continueFinalMessage: boolean;
  echo: boolean;
  addSpecialTokens: boolean;
  truncatePromptTokens: number | null;
  /** Prefix-cache partition: cached tokens are reused only between requests with the same salt. */
  cacheSalt: string | null;
  // Generation.
  n: number;
  /** use_beam_search: the n best of n beams (engine/llama/beam-search.ts) instead of n samples. */
  beamSearch: { lengthPenalty: number } | null;
  maxTokens: number | null;
  minTokens: number;
  sampling: SamplingSettings;
  logitBias: Record<string, number>;
  badWords: string[];
  allowedTokenIds: number[] | null;
  stop: string[];
  stopTokenIds: number[];
  includeStopStrInOutput: boolean;
  /**
   * The token that ends a choice (an end-of-generation token, or one of stopTokenIds) is part of
   * its output: its id and log-probability, not its text (Tinker's sampled sequences end with it).
   * Absent or false: it is left out, as on the OpenAI routes.
   */
  includeStopToken?: boolean;
  ignoreEos: boolean;
  skipSpecialTokens: boolean;
  /** With special tokens kept in the text: a space between a special token and its neighbours. */
  spacesBetweenSpecialTokens: boolean;
  /** A GBNF grammar the output must follow (structured outputs), or null. */
  grammar: string | null;
  /** Stop when the last `minCount` blocks of some length in [minPatternSize, maxPatternSize] repeat. */
  repetitionDetection: { minPatternSize: number; maxPatternSize: number; minCount: number } | null;
  // Outputs.
  logprobs: boolean;
  topLogprobs: number;
  promptLogprobs: number | null;
  returnTokensAsTokenIds: boolean;
  /** The client asked for the output's token ids (return_token_ids). */
  returnTokenIds: boolean;
}

export interface TokenLogprobOut {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export type PromptLogprobOut = Record<string, { logprob: number; rank: number; decoded_token: string }> | null;

/** The engine's messages travel in batches: each IPC message is an array of these. */
export type EngineToGateway =
  | { type: "ready" }
  | {
      type: "started";
      id: string;
      promptTokenIds: number[];
      promptLogprobs: PromptLogprobOut[] | null;
      echoText: string | null;
      /** Each prompt token's text, for a legacy completion's echoed log-probabilities; else null. */
      promptTokenTexts: string[] | null;
    }
  | { type: "delta"; id: string; choice: number; text: string; tokenIds: number[]; logprobs: TokenLogprobOut[] }
  | { type: "finished"; id: string; choice: number; finishReason: "stop" | "length"; stopReason: number | string | null }
  | { type: "done"; id: string; usage: { promptTokens: number; completionTokens: number; cachedTokens: number } }
  | { type: "failed"; id: string; kind: "bad_request" | "overloaded" | "not_found" | "unavailable" | "internal"; message: string }
  /** The answer to `describe`: null when the model's file is not here (yet) or cannot be read (`error` says why). */
  | { type: "described"; id: string; maxModelLen: number | null; error: string | null }
  /** The answer to `render` (a failure comes as `failed` with the same id). */
  | { type: "rendered"; id: string; prompt: RenderedPrompt }
  /** The answer to `usage`. */
  | { type: "usage"; id: string; pools: PoolUsage[] }
  /** The answer to `tokenizer` (a failure comes as `failed` with the same id). */
  | { type: "tokenizerAnswer"; id: string; answer: TokenizerAnswer };

/** One loaded context of the embedded engine (a base model, with or without an adapter), for /metrics. */
export interface PoolUsage {
  model: string;
  /** The context has a LoRA adapter loaded. */
  adapter: boolean;
  sequences: number;
  sequencesInUse: number;
  /** KV cells of all its sequences, and those the running sequences hold. */
  cells: number;
  cellsInUse: number;
}

/** A request's prompt as the model's tokenizer and chat template make it, for a remote engine. */
export interface RenderedPrompt {
  promptTokenIds: number[];
  echoText: string | null;
  promptTokenTexts: string[] | null;
  /** The model's end-of-generation tokens (a remote replica's output ends on them as the embedded engine's does). */
  endTokenIds: number[];
}

export type GatewayToEngine =
  | { type: "generate"; request: GenerateRequest }
  | { type: "cancel"; id: string }
  /** The loaded contexts' sequences and KV cells, for /metrics. */
  | { type: "usage"; id: string }
  /** What generation on a base model allows (its context per sequence), without loading its weights. */
  | { type: "describe"; id: string; base: BaseModelRef }
  /**
   * The prompt of a request another server generates (engine/remote): rendered and tokenized here
   * with the base model's own tokenizer and template (its vocabulary only, no weights), so a
   * remote replica sees exactly the tokens the embedded engine would.
   */
  | { type: "render"; request: GenerateRequest; contextSize: number }
  /** vLLM's tokenizer calls (inference/tokenizer): on the base model's vocabulary alone, no weights. */
  | { type: "tokenizer"; id: string; base: BaseModelRef; op: TokenizerOp };

export type TokenizerOp =
  | { kind: "tokenize"; text: string; addSpecialTokens: boolean }
  | { kind: "detokenize"; tokens: number[] }
  /** Each token's vocabulary entry (transformers' convert_ids_to_tokens). */
  | { kind: "pieces"; tokens: number[] }
  | { kind: "info" };

export type TokenizerAnswer =
  | { kind: "tokenize"; tokens: number[]; pieces: string[] }
  | { kind: "detokenize"; text: string }
  | { kind: "pieces"; pieces: string[] }
  | { kind: "info"; info: TokenizerFacts };

/** What tokenizer_info reports of a vocabulary (special tokens as id and text; null: the vocabulary has none). */
export interface TokenizerFacts {
  vocabSize: number;
  bos: { id: number; text: string } | null;
  eos: { id: number; text: string } | null;
  unk: { id: number; text: string } | null;
  pad: { id: number; text: string } | null;
  addBos: boolean;
  chatTemplate: string | null;
  /** The model's trained context length. */
  trainContextSize: number;
}

/** Why a request under a grammar is refused when its token bans leave nothing to sample. */
export const NOTHING_LEFT_TO_SAMPLE = "the structured output and logit_bias / bad_words / allowed_token_ids leave no token the model may produce";
