// What happens to a choice's generated text on its way out: a leading <think> block becomes
// reasoning; then, by tool_choice, Hermes <tool_call> blocks become tool calls ("auto"), or the
// whole text is a forced call ("required", a named function); the rest is content. Streamed and
// unary replies share it.
import { NamedCallStream, RequiredCallsStream, type ToolCallDelta } from "./forced-tool-calls.js";
import { ReasoningSplitter } from "./reasoning.js";
import { ToolCallParser } from "./tool-calls.js";
import type { ToolMode } from "./tool-choice.js";

export interface ReplyParts {
  reasoning: string;
  content: string;
  calls: ToolCallDelta[];
}

export class ReplyPipeline {
  private readonly reasoning = new ReasoningSplitter();
  private readonly hermes: ToolCallParser | null;
  private readonly forced: NamedCallStream | RequiredCallsStream | null;
  private hermesCalls = 0;

  constructor(mode: ToolMode) {
    this.hermes = mode.kind === "auto" ? new ToolCallParser(mode.maxCalls) : null;
    this.forced = mode.kind === "named" ? new NamedCallStream(mode.name) : mode.kind === "required" ? new RequiredCallsStream(mode.maxCalls) : null;
  }

  push(text: string): ReplyParts {
    const { reasoning, content } = this.reasoning.push(text);
    return this.toolStage(reasoning, content, false);
  }

  flush(): ReplyParts {
    const { reasoning, content } = this.reasoning.flush();
    return this.toolStage(reasoning, content, true);
  }

  private toolStage(reasoning: string, content: string, final: boolean): ReplyParts {
    if (this.forced) {
      const calls = this.forced.push(content);
      return { reasoning, content: "", calls: final ? [...calls, ...this.forced.flush()] : calls };
    }
    if (!this.hermes) return { reasoning, content, calls: [] };
    const parsed = this.hermes.push(content);
    const calls = parsed.calls.map((call) => ({ index: this.hermesCalls++, id: call.id, name: call.name, arguments: call.arguments }));
    if (!final) return { reasoning, content: parsed.content, calls };
    return { reasoning, content: parsed.content + this.hermes.flush().content, calls };
  }
}

/** A reply's tool-call deltas joined into whole calls, in index order. */
export function joinToolCalls(deltas: ToolCallDelta[]): { id: string; name: string; arguments: string }[] {
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const delta of deltas) {
    const call = (calls[delta.index] ??= { id: delta.id ?? "", name: delta.name ?? "", arguments: "" });
    call.arguments += delta.arguments;
  }
  return calls;
}
