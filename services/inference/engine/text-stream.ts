// Turns generated tokens into text deltas: stops at the first stop string (cut, or kept with
// include_stop_str_in_output), and holds back text that could still become a stop string or is an
// incomplete UTF-8 character, so a streamed delta never has to be taken back.
export class TextStream {
  private emitted = "";

  constructor(
    private readonly stops: readonly string[],
    private readonly includeStop: boolean,
  ) {}

  /** `full` is the detokenized text of every generated token so far. */
  push(full: string): { delta: string; stop: string | null } {
    let stopAt = -1;
    let stopString: string | null = null;
    for (const stop of this.stops) {
      const index = full.indexOf(stop, Math.max(0, this.emitted.length - stop.length + 1));
      if (index >= 0 && (stopAt < 0 || index < stopAt)) {
        stopAt = index;
        stopString = stop;
      }
    }
    if (stopString !== null) {
      const end = this.includeStop ? stopAt + stopString.length : stopAt;
      return { delta: this.take(full.slice(0, Math.max(end, this.emitted.length))), stop: stopString };
    }
    let safe = full.length;
    if (full.endsWith("\uFFFD")) safe = full.length - 1;
    for (const stop of this.stops) {
      for (let keep = Math.min(stop.length - 1, safe); keep > 0; keep--) {
        if (full.slice(safe - keep, safe) === stop.slice(0, keep)) {
          safe = Math.min(safe, full.length - keep - (full.length - safe));
          break;
        }
      }
    }
    return { delta: this.take(full.slice(0, Math.max(safe, this.emitted.length))), stop: null };
  }

  /** Whatever was held back, at the end of generation. */
  flush(full: string): string {
    return this.take(full.replace(/\uFFFD$/, ""));
  }

  private take(upTo: string): string {
    const delta = upTo.slice(this.emitted.length);
    this.emitted = upTo.length > this.emitted.length ? upTo : this.emitted;
    return delta;
  }
}
