// What happens to a choice's generated text on its way out: a leading <think> block becomes
// reasoning, Hermes <tool_call> blocks become tool calls (when the request offers tools with
// tool_choice "auto"), the rest is content. Streamed and unary replies share it.
import { ReasoningSplitter } from "./reasoning.js";
import { ToolCallParser, type ParsedToolCall } from "./tool-calls.js";

export interface ReplyParts {
  reasoning: string;
  content: string;
  calls: ParsedToolCall[];
}

export class ReplyPipeline {
  private readonly reasoning = new ReasoningSplitter();
  private readonly tools: ToolCallParser | null;

  constructor(options: { parseToolCalls: boolean; maxToolCalls: number }) {
    this.tools = options.parseToolCalls ? new ToolCallParser(options.maxToolCalls) : null;
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
    if (!this.tools) return { reasoning, content, calls: [] };
    const parsed = this.tools.push(content);
    if (!final) return { reasoning, ...parsed };
    const rest = this.tools.flush();
    return { reasoning, content: parsed.content + rest.content, calls: parsed.calls };
  }
}
