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
    private readonly events: ChoiceEvents,
  ) {
    this.stream = new TextStream(request.stop, request.includeStopStrInOutput);
  }

  get completionTokens(): number {
    return Math.max(this.generated.length, this.counted);
  }

  /** Takes a piece; true when the choice has ended here (the replica's request should be closed). */
  push(piece: Piece): boolean {
    if (this.ended) return true;
    this.counted = Math.max(this.counted, piece.generated ?? 0);
    const stopAt = piece.tokenIds.findIndex((id) => this.request.stopTokenIds.includes(id));
    if (stopAt >= 0) {
      // The stop token's own text is not output (as in the embedded engine); tokens before it are.
      this.take(piece.tokenIds.slice(0, stopAt), piece.logprobs.slice(0, stopAt), stopAt > 0 ? piece.text : "");
      this.end("stop", piece.tokenIds[stopAt] as number);
      return true;
    }
    const stop = this.take(piece.tokenIds, piece.logprobs, piece.text);
    if (stop !== null) {
      this.finish("stop", stop);
      return true;
    }
    if (this.request.repetitionDetection && repeats(this.generated, this.request.repetitionDetection)) {
      this.end("stop", "repetition");
      return true;
    }
    if (this.completionTokens >= this.maxTokens) {
      this.end("length", null);
      return true;
    }
    return false;
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
