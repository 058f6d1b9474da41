// One streamed chat completion against any OpenAI-compatible server (this service or
// llama-server), timed the way a client sees it: time to the first chunk carrying generated text,
// and the completion tokens the server reports (else the chunks that carried text).
export interface StreamResult {
  tokens: number;
  ttftMs: number;
}

export async function streamChat(options: { url: string; key: string | null; model: string; prompt: string; maxTokens: number }): Promise<StreamResult> {
  const started = performance.now();
  const response = await fetch(`${options.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(options.key ? { authorization: `Bearer ${options.key}` } : {}) },
    body: JSON.stringify({
      model: options.model,
      messages: [{ role: "user", content: options.prompt }],
      temperature: 0,
      max_tokens: options.maxTokens,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  }).catch((error: unknown) => {
    throw new Error(`${options.url}: the request failed before an answer: ${String((error as { cause?: unknown }).cause ?? error)}`);
  });
  if (!response.ok || !response.body) throw new Error(`${options.url}: HTTP ${response.status}: ${await response.text()}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  let ttftMs = 0;
  let chunksWithText = 0;
  let reported: number | null = null;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = pending.indexOf("\n\n")) >= 0) {
      const event = pending.slice(0, end);
      pending = pending.slice(end + 2);
      const data = event.startsWith("data: ") ? event.slice(6) : "";
      if (!data || data === "[DONE]") continue;
      const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[]; usage?: { completion_tokens?: number } | null };
      if (chunk.choices?.some((choice) => (choice.delta?.content ?? "") !== "")) {
        if (chunksWithText++ === 0) ttftMs = performance.now() - started;
      }
      if (typeof chunk.usage?.completion_tokens === "number") reported = chunk.usage.completion_tokens;
    }
  }
  return { tokens: reported ?? chunksWithText, ttftMs };
}
