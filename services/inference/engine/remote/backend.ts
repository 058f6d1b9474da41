// What each kind of remote server (llama-server, vLLM) implements: which request options it can
// honour, how its health and context are read, how an adapter is made servable on a replica, and
// one choice's generation as a stream of token pieces. Routing, stops and events are shared
// (remote-engine.ts, choice-stream.ts).
import type { GenerateRequest, TokenLogprobOut } from "../protocol.js";
import type { Replica } from "./replica.js";

/** A checkpoint's adapter as this service holds it: the GGUF file, beside the PEFT files. */
export interface AdapterRef {
  /** Unique per adapter (the directory name under DATA_DIR/adapters). */
  key: string;
  /** The llama.cpp LoRA GGUF (adapter.gguf); its directory also holds the PEFT files. */
  ggufPath: string;
}

/** One choice to generate on a replica. */
export interface ChoiceCall {
  request: GenerateRequest;
  promptTokenIds: number[];
  /** The most tokens to generate (the request's max_tokens within the replica's context). */
  maxTokens: number;
  /** This choice's seed (so the n choices of a seeded request differ), or null for a random one. */
  seed: number | null;
}

/** Tokens the replica generated since its last piece, with their text (possibly "" while a character is incomplete). */
export interface Piece {
  tokenIds: number[];
  text: string;
  logprobs: TokenLogprobOut[];
  /** The replica's count of tokens generated so far, where it reports one (it may include tokens it left out). */
  generated?: number;
}

export interface ChoiceEnd {
  finishReason: "stop" | "length";
  /** The token id or stop string the replica stopped on, when it says. */
  stopReason: number | string | null;
  /** Prompt tokens the replica reused from its cache, when it says. */
  cachedTokens: number;
}

export interface Backend {
  readonly kind: string;
  /** Whether the replica stops on the request's stop_token_ids itself (else this service closes the request). */
  readonly stopsOnStopTokenIds: boolean;
  /** Throws a 400 naming the first option this kind of server cannot honour. */
  refuseUnsupported(request: GenerateRequest): void;
  /**
   * True when the replica answers its health endpoint as ready; also brings what this service
   * knows of the replica's loaded adapters up to date (a replica restarted by someone else has
   * lost them).
   */
  healthy(replica: Replica): Promise<boolean>;
  /** The replica's context per request (prompt plus completion). */
  contextSize(replica: Replica): Promise<number>;
  /** Whether the adapter is servable on the replica right now (routing prefers such replicas). */
  holds(replica: Replica, adapter: AdapterRef): boolean;
  /** Makes the adapter servable on the replica (loading it, or restarting a replica this service runs). */
  prepare(replica: Replica, adapter: AdapterRef): Promise<void>;
  /** One choice: pieces as they come, then how it ended. Aborting the signal closes the request. */
  generate(replica: Replica, adapter: AdapterRef | null, call: ChoiceCall, signal: AbortSignal): AsyncGenerator<Piece, ChoiceEnd>;
}
