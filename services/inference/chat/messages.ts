// Chat messages as the chat template reads them.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** Which string field holds a text-like content part's text. */
export const TEXT_FIELD: Record<string, string> = { text: "text", refusal: "refusal" };

/** A message's text parts as one string (joined by newlines, as vLLM does), which every template understands. */
export function flattenTextParts(message: JsonObject): JsonObject {
  const content = message.content;
  if (!Array.isArray(content)) return message;
  const texts = content.map((part) => {
    if (typeof part !== "object" || part === null || Array.isArray(part)) return "";
    const field = typeof part.type === "string" ? TEXT_FIELD[part.type] : undefined;
    const text = field ? part[field] : undefined;
    return typeof text === "string" ? text : "";
  });
  return { ...message, content: texts.join("\n") };
}

/** The text of the final message (continue_final_message: what the output continues). */
export function continuedText(messages: JsonValue | undefined): string {
  const last = Array.isArray(messages) ? messages[messages.length - 1] : undefined;
  if (typeof last !== "object" || last === null || Array.isArray(last)) return "";
  const content = flattenTextParts(last).content;
  return typeof content === "string" ? content : "";
}
