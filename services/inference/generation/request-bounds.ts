// The bounds of a generation request that depend on the deployment, checked once the request's
// fields are validated and before anything is built for it: how many choices the engine runs in
// parallel (n, best_of, beam width) and how much prompt text a request may carry (MAX_PROMPT_BYTES).
// The static bounds (n <= 128, stop lists, tools, ...) are field rules in the proto.
import type { JsonValue } from "@bufbuild/protobuf";
import { validationError } from "../../core/errors.js";

export interface RequestLimits {
  /** Most UTF-8 bytes of prompt text per request (MAX_PROMPT_BYTES). */
  maxPromptBytes: number;
  /** The most choices the engine serving a base model runs at once (ENGINE_SEQUENCES); null: no limit of its own. */
  maxChoices(baseName: string): number | null;
}

/** n (and the beam width, which is n): at most what the base model's engine runs in parallel. */
export function checkChoices(n: number, baseName: string, limits: RequestLimits): void {
  const max = limits.maxChoices(baseName);
  if (max === null || n <= max) return;
  throw validationError([
    {
      type: "less_than_equal",
      loc: ["body", "n"],
      msg: `Input should be less than or equal to ${max} (the sequences this deployment runs in parallel for one request, ENGINE_SEQUENCES)`,
      input: n,
      ctx: { le: max },
    },
  ]);
}

/** The prompt's text (a lower bound of what reaches the tokenizer) against MAX_PROMPT_BYTES. */
export function checkPromptBytes(bytes: number, field: string, limits: RequestLimits): void {
  if (bytes <= limits.maxPromptBytes) return;
  throw validationError([
    {
      type: "too_long",
      loc: ["body", field],
      msg: `The prompt should have at most ${limits.maxPromptBytes} bytes of text (MAX_PROMPT_BYTES), not ${bytes}`,
      input: `<${bytes} bytes of text>`,
      ctx: { field_type: "Prompt", max_length: limits.maxPromptBytes, actual_length: bytes },
    },
  ]);
}

/** A chat request's prompt text: every string of its messages, tools and documents (all reach the template). */
export function chatPromptBytes(sent: { messages?: JsonValue; tools?: JsonValue; documents?: JsonValue }, limit: number): number {
  let total = 0;
  for (const part of [sent.messages, sent.tools, sent.documents]) {
    if (part === undefined) continue;
    total += textBytes(part, limit - total);
    if (total > limit) break;
  }
  return total;
}

/** The UTF-8 bytes of every string in a value (keys included), stopping once past `limit`. */
export function textBytes(value: JsonValue, limit: number): number {
  let total = 0;
  const stack: JsonValue[] = [value];
  while (stack.length > 0 && total <= limit) {
    const item = stack.pop() as JsonValue;
    if (typeof item === "string") total += Buffer.byteLength(item, "utf8");
    else if (Array.isArray(item)) for (const entry of item) stack.push(entry);
    else if (typeof item === "object" && item !== null) {
      for (const [key, entry] of Object.entries(item)) {
        total += Buffer.byteLength(key, "utf8");
        stack.push(entry);
      }
    }
  }
  return total;
}
