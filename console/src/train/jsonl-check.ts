// SFT data checked in the page, line by line, as the server's reader does (services/training/
// sft-data.ts and tokenize/messages.ts): each non-blank line a JSON object whose `messages` is a
// non-empty list of objects with a string `role` (or ART Choices), the last one the assistant's, and
// `tools`, when present, a list of objects. Text arrives in chunks, so a file of any size is checked
// without holding it whole.

/** At most this many line errors are kept (the count goes on). */
export const MAX_LISTED_ERRORS = 20;

export interface JsonlReport {
  /** Lines read, blank ones included. */
  lines: number;
  /** Lines that are valid conversations. */
  conversations: number;
  /** Characters of message text (string contents and text parts), a rough size of what trains. */
  characters: number;
  errorCount: number;
  /** The first MAX_LISTED_ERRORS errors, "line 7: …". */
  errors: string[];
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: Json | undefined): value is JsonObject => typeof value === "object" && value !== null && !Array.isArray(value);

/** One line's problem (without the "line N" prefix), or null; `textLength` receives its text size. */
export function lineProblem(raw: string, textLength: (n: number) => void): string | null {
  let parsed: Json;
  try {
    parsed = JSON.parse(raw) as Json;
  } catch (error) {
    return `is not JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (!isObject(parsed)) return "must be a JSON object like {\"messages\": [...]}";
  const messages = parsed.messages;
  if (messages === undefined) return "has no `messages` (expected {\"messages\": [{\"role\": \"user\", ...}, {\"role\": \"assistant\", ...}]})";
  if (!Array.isArray(messages)) return "`messages` must be a list";
  if (messages.length === 0) return "`messages` must not be empty";
  let size = 0;
  for (const [position, message] of messages.entries()) {
    if (!isObject(message)) return `messages[${position}] must be an object with a "role"`;
    // An ART Choice (no role, a `message` object) becomes the assistant's message on the server.
    const isChoice = typeof message.role !== "string" && (isObject(message.message) || "finish_reason" in message || "logprobs" in message);
    if (!isChoice && typeof message.role !== "string") return `messages[${position}] needs a string "role"`;
    size += textOf(isChoice && isObject(message.message) ? message.message.content : message.content);
  }
  const last = messages[messages.length - 1] as JsonObject;
  const lastRole = typeof last.role === "string" ? last.role : "assistant";
  if (lastRole !== "assistant") return `the last message must be the assistant's (it is "${lastRole}"): SFT learns the assistant's reply`;
  const tools = parsed.tools;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) return "`tools` must be a list";
    const bad = tools.findIndex((tool) => !isObject(tool));
    if (bad >= 0) return `tools[${bad}] must be an object`;
  }
  textLength(size);
  return null;
}

function textOf(content: Json | undefined): number {
  if (typeof content === "string") return content.length;
  if (Array.isArray(content)) return content.reduce<number>((sum, part) => sum + (isObject(part) && typeof part.text === "string" ? part.text.length : 0), 0);
  return 0;
}

/** Feeds text in chunks (any split, even inside a line); `finish` checks the last line and reports. */
export class JsonlChecker {
  private rest = "";
  private readonly report: JsonlReport = { lines: 0, conversations: 0, characters: 0, errorCount: 0, errors: [] };

  push(chunk: string): void {
    const text = this.rest + chunk;
    let start = 0;
    for (let end = text.indexOf("\n", start); end >= 0; end = text.indexOf("\n", start)) {
      this.line(text.slice(start, end));
      start = end + 1;
    }
    this.rest = text.slice(start);
  }

  finish(): JsonlReport {
    if (this.rest !== "") this.line(this.rest);
    this.rest = "";
    if (this.report.conversations === 0 && this.report.errorCount === 0) this.fail("the data has no conversations: add lines like {\"messages\": [{\"role\": \"user\", \"content\": \"…\"}, {\"role\": \"assistant\", \"content\": \"…\"}]}");
    return this.report;
  }

  /** The report so far (for progress while a large file is read). */
  get progress(): Readonly<JsonlReport> {
    return this.report;
  }

  private line(raw: string): void {
    const number = ++this.report.lines;
    const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (text.trim() === "") return;
    const problem = lineProblem(text, (n) => (this.report.characters += n));
    if (problem === null) this.report.conversations++;
    // "line 3 is not JSON: …" reads on; "line 7: `messages` must be a list" names its subject.
    else this.fail(`line ${number}${/^(is|has|must) /.test(problem) ? " " : ": "}${problem}`);
  }

  private fail(message: string): void {
    this.report.errorCount++;
    if (this.report.errors.length < MAX_LISTED_ERRORS) this.report.errors.push(message);
  }
}

/** Checks a file as a stream of text (never read into one string); `onProgress` gets bytes read. */
export async function checkFile(file: Blob, signal: AbortSignal, onProgress: (bytesRead: number, report: Readonly<JsonlReport>) => void): Promise<JsonlReport> {
  const checker = new JsonlChecker();
  // A streaming decoder keeps a character split across two chunks whole.
  const decoder = new TextDecoder();
  const reader = file.stream().getReader();
  let bytes = 0;
  try {
    for (;;) {
      if (signal.aborted) throw new DOMException("The check was stopped.", "AbortError");
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      checker.push(decoder.decode(value, { stream: true }));
      onProgress(bytes, checker.progress);
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    throw error;
  }
  checker.push(decoder.decode());
  return checker.finish();
}

/** Checks pasted text. */
export function checkText(text: string): JsonlReport {
  const checker = new JsonlChecker();
  checker.push(text);
  return checker.finish();
}
