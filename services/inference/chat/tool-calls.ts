// Hermes-style tool calls in generated text: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
// blocks become OpenAI `tool_calls` (ids, JSON-string arguments); text outside them stays
// content. Works on streamed deltas: a block is held back until it closes, then reported as
// one call (its name first, then its arguments).
import { newToolCallId } from "./forced-tool-calls.js";
import { partialSuffix } from "./text-markers.js";

const OPEN = "<tool_call>";
const CLOSE = "</tool_call>";

export interface ParsedToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface ToolCallUpdate {
  content: string;
  calls: ParsedToolCall[];
}

export class ToolCallParser {
  private pending = "";
  private count = 0;

  constructor(private readonly maxCalls: number) {}

  push(text: string): ToolCallUpdate {
    this.pending += text;
    const out: ToolCallUpdate = { content: "", calls: [] };
    for (;;) {
      const start = this.pending.indexOf(OPEN);
      if (start < 0) {
        const keep = partialSuffix(this.pending, OPEN);
        out.content += this.pending.slice(0, this.pending.length - keep);
        this.pending = this.pending.slice(this.pending.length - keep);
        return out;
      }
      out.content += this.pending.slice(0, start);
      const end = this.pending.indexOf(CLOSE, start);
      if (end < 0) {
        this.pending = this.pending.slice(start);
        return out;
      }
      const body = this.pending.slice(start + OPEN.length, end);
      this.pending = this.pending.slice(end + CLOSE.length);
      const call = parseCall(body);
      if (call && this.count < this.maxCalls) {
        out.calls.push(call);
        this.count++;
      } else if (!call) out.content += OPEN + body + CLOSE; // not a valid call: leave the text as it was
    }
  }

  /** Whatever is held back at the end (an unclosed block stays text). */
  flush(): ToolCallUpdate {
    const content = this.pending;
    this.pending = "";
    return { content, calls: [] };
  }
}

function parseCall(body: string): ParsedToolCall | null {
  try {
    const parsed = JSON.parse(body.trim()) as { name?: unknown; arguments?: unknown; parameters?: unknown };
    if (typeof parsed.name !== "string") return null;
    const args = parsed.arguments ?? parsed.parameters ?? {};
    return { id: newToolCallId(), name: parsed.name, arguments: typeof args === "string" ? args : JSON.stringify(args) };
  } catch {
    return null;
  }
}
