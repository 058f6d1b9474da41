// Replies whose whole text is a forced tool call (tool_choice "required" or a named function), read
// as they stream. A named call is announced with its first text and its arguments then grow with
// each delta; "required" output is a JSON list, and each call is reported once its object closes.
import { randomUUID } from "node:crypto";

/** One step of a tool call in a reply: id and name when it starts, then pieces of its arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

export function newToolCallId(): string {
  return `call_${randomUUID().replace(/-/g, "").slice(0, 24)}`;
}

export class NamedCallStream {
  private started = false;

  constructor(private readonly name: string) {}

  push(text: string): ToolCallDelta[] {
    if (text === "") return [];
    if (this.started) return [{ index: 0, arguments: text }];
    this.started = true;
    return [{ index: 0, id: newToolCallId(), name: this.name, arguments: text }];
  }

  /** A reply that produced no text still reports the call (with empty arguments). */
  flush(): ToolCallDelta[] {
    if (this.started) return [];
    this.started = true;
    return [{ index: 0, id: newToolCallId(), name: this.name, arguments: "" }];
  }
}

export class RequiredCallsStream {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private element = "";
  private count = 0;

  constructor(private readonly maxCalls: number) {}

  push(text: string): ToolCallDelta[] {
    const calls: ToolCallDelta[] = [];
    for (const char of text) {
      // Inside a list item (depth 2 and deeper) every character belongs to it.
      if (this.depth >= 2) this.element += char;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (char === "\\") this.escaped = true;
        else if (char === '"') this.inString = false;
        continue;
      }
      if (char === '"') this.inString = true;
      else if (char === "{" || char === "[") {
        this.depth++;
        if (this.depth === 2) this.element = char;
      } else if (char === "}" || char === "]") {
        this.depth--;
        if (this.depth === 1) {
          const call = this.parse(this.element);
          this.element = "";
          if (call) calls.push(call);
        }
      }
    }
    return calls;
  }

  /** An unfinished item (output cut by max_tokens) is not a call. */
  flush(): ToolCallDelta[] {
    return [];
  }

  private parse(text: string): ToolCallDelta | null {
    if (this.count >= this.maxCalls) return null;
    try {
      const item = JSON.parse(text) as { name?: unknown; parameters?: unknown };
      if (typeof item.name !== "string") return null;
      return { index: this.count++, id: newToolCallId(), name: item.name, arguments: JSON.stringify(item.parameters ?? {}) };
    } catch {
      return null;
    }
  }
}
