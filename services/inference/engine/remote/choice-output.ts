// One choice's output from a remote replica -> the engine's delta and finished events, with the
// request's stops applied here rather than by the replica, so every backend stops the same way as
// the embedded engine: stop strings (cut, or kept with include_stop_str_in_output, never split over
// deltas), stop token ids, repetition detection and max_tokens. Token ids and log-probabilities are
// held back with the text they belong to.
import type { GenerateRequest, TokenLogprobOut } from "../protocol.js";
import { repeats } from "../repetition.js";
import { TextStream } from "../text-stream.js";
import type { ChoiceEnd, Piece } from "./backend.js";

export interface ChoiceEvents {
  delta(text: string, tokenIds: number[], logprobs: TokenLogprobOut[]): void;
  finished(finishReason: "stop" | "length", stopReason: number | string | null): void;
}

/**
 * What to do with the replica's request after a piece: read on; read to its end without taking
 * more output (the replica stops there by itself, and its last message says what it reused from
 * its cache); or close it now (the replica would go on).
 */
export type Verdict = "more" | "drain" | "close";

export class ChoiceOutput {
  private readonly stream: TextStream;
  private readonly generated: number[] = [];
  /** The replica's own count, when it reports one (llama-server leaves some tokens out of its stream). */
  private counted = 0;
  private full = "";
  private held: { tokenIds: number[]; logprobs: TokenLogprobOut[] } = { tokenIds: [], logprobs: [] };
  private ended = false;
  /** True once any text or token went out: from then on the choice cannot move to another replica. */
  sent = false;

  constructor(
    private readonly request: GenerateRequest,
    private readonly maxTokens: number,
    /** The model's end-of-generation tokens: the output ends on one, without it, as in the embedded engine. */
    private readonly endTokenIds: ReadonlySet<number>,
    /** Whether the replica stops on stop_token_ids itself (vLLM) or goes on (llama-server). */
    private readonly replicaStopsOnIds: boolean,
    private readonly events: ChoiceEvents,
  ) {
    this.stream = new TextStream(request.stop, request.includeStopStrInOutput);
  }

  get completionTokens(): number {
    return Math.max(this.generated.length, this.counted);
  }

  /** Takes a piece; says whether the replica's request goes on. */
  push(piece: Piece): Verdict {
    if (this.ended) return "close";
    this.counted = Math.max(this.counted, piece.generated ?? 0);
    const stopAt = piece.tokenIds.findIndex((id) => this.request.stopTokenIds.includes(id) || (!this.request.ignoreEos && this.endTokenIds.has(id)));
    if (stopAt >= 0) {
      const id = piece.tokenIds[stopAt] as number;
      // The stop or end token is not output, nor counted (as in the embedded engine), unless the
      // request includes it (its id and log-probability); tokens before it are.
      const kept = this.request.includeStopToken ? stopAt + 1 : stopAt;
      this.take(piece.tokenIds.slice(0, kept), piece.logprobs.slice(0, kept), stopAt > 0 ? piece.text : "");
      if (piece.generated !== undefined) this.counted = piece.generated - (piece.tokenIds.length - kept);
      this.end("stop", id);
      return this.endTokenIds.has(id) || this.replicaStopsOnIds ? "drain" : "close";
    }
    const stop = this.take(piece.tokenIds, piece.logprobs, piece.text);
    if (stop !== null) {
      this.finish("stop", stop);
      return "close";
    }
    if (this.request.repetitionDetection && repeats(this.generated, this.request.repetitionDetection)) {
      this.end("stop", "repetition");
      return "close";
    }
    if (this.completionTokens >= this.maxTokens) {
      // The replica was asked for the same number of tokens: it ends here too.
      this.end("length", null);
      return "drain";
    }
    return "more";
  }

  /** The replica ended the choice (end of generation, its max tokens, or its context). */
  close(end: ChoiceEnd): void {
    if (!this.ended) this.end(end.finishReason, end.stopReason);
  }

  private take(tokenIds: number[], logprobs: TokenLogprobOut[], text: string): string | null {
    this.generated.push(...tokenIds);
    this.held.tokenIds.push(...tokenIds);
    this.held.logprobs.push(...logprobs);
    this.full += text;
    const { delta, stop } = this.stream.push(this.full);
    if (delta) this.emit(delta);
    return stop;
  }

  private end(finishReason: "stop" | "length", stopReason: number | string | null): void {
    this.emit(this.stream.flush(this.full));
    this.finish(finishReason, stopReason);
  }

  private finish(finishReason: "stop" | "length", stopReason: number | string | null): void {
    if (this.held.tokenIds.length > 0) this.emit("");
    this.ended = true;
    this.events.finished(finishReason, stopReason);
  }

  private emit(text: string): void {
    if (!text && this.held.tokenIds.length === 0) return;
    this.sent = true;
    const { tokenIds, logprobs } = this.held;
    this.held = { tokenIds: [], logprobs: [] };
    this.events.delta(text, tokenIds, logprobs);
  }
}
