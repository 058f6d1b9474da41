// HTTP to a replica: JSON calls with a deadline, and server-sent events read off a streamed body.
// A failure to reach the replica (refused, reset, no headers in time) is a ReplicaUnreachable, so
// routing can tell a replica that is down from one that answered with an error.
export class ReplicaUnreachable extends Error {
  constructor(
    url: string,
    cause: unknown,
    /** No answer within the deadline (as opposed to a refused or broken connection). */
    readonly timedOut = false,
  ) {
    super(`${url}: ${describe(cause)}`);
    this.name = "ReplicaUnreachable";
  }
}

/** A replica's answer with an error status: its body's message, or the start of its text. */
export class ReplicaAnswered extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ReplicaAnswered";
  }
}

export interface CallOptions {
  apiKey: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * Sends a request; resolves with the response once its headers are in (within timeoutMs). A
 * request that fails before any answer is sent once more on a new connection: a kept-alive
 * connection the replica has just closed fails that way without the replica being down.
 */
export async function send(url: string, init: { method: "GET" | "POST"; body?: unknown }, options: CallOptions): Promise<Response> {
  try {
    return await sendOnce(url, init, options);
  } catch (error) {
    if (!(error instanceof ReplicaUnreachable) || error.timedOut || options.signal?.aborted) throw error;
    return sendOnce(url, init, options);
  }
}

async function sendOnce(url: string, init: { method: "GET" | "POST"; body?: unknown }, options: CallOptions): Promise<Response> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new Error(`no answer within ${options.timeoutMs} ms`)), options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
  try {
    const response = await fetch(url, {
      method: init.method,
      headers: {
        ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
        ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      signal,
    });
    // The deadline covers the headers only; a stream's body takes as long as it takes.
    clearTimeout(timer);
    return response;
  } catch (error) {
    clearTimeout(timer);
    if (options.signal?.aborted) throw error;
    throw new ReplicaUnreachable(url, deadline.signal.aborted ? deadline.signal.reason : error, deadline.signal.aborted);
  }
}

/** A JSON call: the parsed body of a 2xx answer, else ReplicaAnswered. */
export async function callJson(url: string, init: { method: "GET" | "POST"; body?: unknown }, options: CallOptions): Promise<unknown> {
  const response = await send(url, init, options);
  const text = await readText(url, response);
  if (!response.ok) throw new ReplicaAnswered(response.status, errorMessage(text, response.status));
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export async function readText(url: string, response: Response): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new ReplicaUnreachable(url, error);
  }
}

/** The message of an OpenAI-style or llama-server error body, else its first 300 characters. */
export function errorMessage(text: string, status: number): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const message = typeof body.error === "object" ? body.error?.message : (body.error ?? body.message ?? body.detail);
    if (typeof message === "string" && message) return message;
  } catch {
    // not JSON
  }
  return text.slice(0, 300) || `HTTP ${status}`;
}

/** The `data:` payloads of an event stream, parsed as JSON, until `[DONE]` or the end. */
export async function* serverSentEvents(url: string, response: Response): AsyncGenerator<unknown> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = response.body.getReader();
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw new ReplicaUnreachable(url, error);
      }
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart())
          .join("\n");
        if (!data) {
          // llama-server reports a failure inside a stream as an `error:` line.
          const failure = event.split("\n").find((line) => line.startsWith("error:"));
          if (failure) throw new ReplicaAnswered(500, errorMessage(failure.slice(6).trim(), 500));
          continue;
        }
        if (data === "[DONE]") return;
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch {
          throw new ReplicaAnswered(502, `${url} sent an event that is not JSON: ${data.slice(0, 200)}`);
        }
        if (typeof parsed === "object" && parsed !== null && "error" in parsed) throw new ReplicaAnswered(500, errorMessage(data, 500));
        yield parsed;
      }
    }
  } finally {
    reader.releaseLock();
    void response.body.cancel().catch(() => {});
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
