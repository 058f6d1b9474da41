// Metrics of one generation as the gateway sees it, whichever engine runs it: waiting until the
// engine starts it (queue and prompt evaluation), running until it ends, time to the first token,
// the gaps between tokens of each choice, tokens, finish reasons and failures.
import { instruments } from "../../core/metrics/index.js";
import { ApiError } from "../../core/errors.js";
import type { EngineToGateway } from "./protocol.js";

export async function* observedGeneration<E extends EngineToGateway>(labels: { model_name: string; entity: string }, events: AsyncGenerator<E>, signal: AbortSignal): AsyncGenerator<E> {
  const started = performance.now();
  let state = "waiting" as "waiting" | "running" | "ended";
  const gauge = () => (state === "waiting" ? instruments.requestsWaiting : instruments.requestsRunning);
  gauge().inc(labels);
  const move = (to: "running" | "ended") => {
    gauge().dec(labels);
    state = to;
    if (to === "running") gauge().inc(labels);
  };
  const lastToken = new Map<number, number>();
  let firstToken = true;
  let failed = false;
  let finished = 0;
  try {
    for await (const event of events) {
      const now = performance.now();
      if (event.type === "started" && state === "waiting") move("running");
      else if (event.type === "delta" && event.tokenIds.length > 0) {
        if (firstToken) instruments.timeToFirstToken.observe(labels, (now - started) / 1000);
        firstToken = false;
        // One observation per token after a choice's first, as vLLM counts them. A delta may carry
        // several tokens (a held-back stop string, a split UTF-8 character): they share its gap.
        const last = lastToken.get(event.choice);
        const gaps = last === undefined ? event.tokenIds.length - 1 : event.tokenIds.length;
        const gap = last === undefined ? 0 : (now - last) / 1000 / gaps;
        for (let i = 0; i < gaps; i++) instruments.interTokenLatency.observe(labels, gap);
        lastToken.set(event.choice, now);
      } else if (event.type === "finished") {
        finished++;
        instruments.requestSuccess.inc({ ...labels, finished_reason: event.finishReason });
      } else if (event.type === "done") {
        instruments.promptTokens.inc(labels, event.usage.promptTokens);
        instruments.generationTokens.inc(labels, event.usage.completionTokens);
        instruments.e2eLatency.observe(labels, (now - started) / 1000);
      }
      yield event;
    }
  } catch (error) {
    // A cancelled request may end in the engine's "cancelled" error: that is an abort, not a failure.
    failed = !signal.aborted;
    if (failed) instruments.generationFailures.inc({ ...labels, code: error instanceof ApiError ? error.kind : "internal" });
    throw error;
  } finally {
    // Ended with no choice finished and no error: cancelled (the client went away or stopped
    // reading; the embedded engine may still send `done` for what it had generated).
    if (finished === 0 && !failed) instruments.requestSuccess.inc({ ...labels, finished_reason: "abort" });
    if (state !== "ended") move("ended");
  }
}
