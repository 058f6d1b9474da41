// Splits a reply into reasoning and content: text inside a leading <think>...</think> is the
// model's reasoning (message.reasoning / delta.reasoning), the rest is content. Works on streamed
// deltas, holding back text that may be the start of a marker.
import { partialSuffix } from "./text-markers.js";
const OPEN = "<think>";
const CLOSE = "</think>";

export class ReasoningSplitter {
  private state: "start" | "reasoning" | "content" = "start";
  private pending = "";
  /** Right after </think>: the newlines that separate reasoning from the answer are dropped. */
  private afterClose = false;

  push(text: string): { reasoning: string; content: string } {
    this.pending += text;
    const out = { reasoning: "", content: "" };
    for (;;) {
      if (this.state === "start") {
        const trimmed = this.pending.trimStart();
        if (trimmed.startsWith(OPEN)) {
          this.pending = trimmed.slice(OPEN.length);
          this.state = "reasoning";
        } else if (OPEN.startsWith(trimmed)) {
          return out; // could still become <think>
        } else {
          this.state = "content";
        }
      } else if (this.state === "reasoning") {
        const end = this.pending.indexOf(CLOSE);
        if (end >= 0) {
          out.reasoning += this.pending.slice(0, end);
          this.pending = this.pending.slice(end + CLOSE.length);
          this.state = "content";
          this.afterClose = true;
        } else {
          const keep = partialSuffix(this.pending, CLOSE);
          out.reasoning += this.pending.slice(0, this.pending.length - keep);
          this.pending = this.pending.slice(this.pending.length - keep);
          return out;
        }
      } else {
        if (this.afterClose) {
          this.pending = this.pending.replace(/^\n+/, "");
          if (this.pending) this.afterClose = false;
        }
        out.content += this.pending;
        this.pending = "";
        return out;
      }
    }
  }

  /** The rest at the end of generation (an unclosed <think> stays reasoning). */
  flush(): { reasoning: string; content: string } {
    const rest = this.pending;
    this.pending = "";
    return this.state === "reasoning" ? { reasoning: rest, content: "" } : { reasoning: "", content: rest };
  }
}
