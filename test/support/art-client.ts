// The ART client's training loop (compat-reference §4.3), reimplemented: create the job, then poll
// the events every second with `after`, re-reading `training_started` until the first
// `gradient_step`, until a terminal event; then read the newest checkpoint's step. Like the real
// client (an OpenAI SDK client underneath), a 408/429/5xx answer is retried twice, after the
// server's Retry-After.
import { expect } from "vitest";
import { rest, type RestResponse } from "./clients.js";

interface EventJson {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

export interface TrainOutcome {
  jobId: string;
  numSequences: number;
  /** The training_started event's data (null when the job ended without starting). */
  started: EventJson["data"] | null;
  gradientSteps: Record<string, number>[];
  terminal: EventJson;
  step: number | null;
}

export async function followJob(key: string, jobId: string, modelId: string, base?: string, timeoutMs = 240_000): Promise<TrainOutcome> {
  const deadline = Date.now() + timeoutMs;
  let after: string | null = null;
  let numSequences = -1;
  let started: EventJson["data"] | null = null;
  const gradientSteps: Record<string, number>[] = [];
  for (;;) {
    if (Date.now() > deadline) throw new Error(`job ${jobId} did not end within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Iterate every page, following has_more, as the OpenAI SDK's cursor page does.
    let cursor = after;
    for (;;) {
      const res = await withRetries(() => rest("GET", `/v1/preview/training-jobs/${jobId}/events${cursor ? `?after=${cursor}` : ""}`, { key, base }));
      expect(res.status).toBe(200);
      const page = res.body as { data: EventJson[]; has_more: boolean };
      for (const event of page.data) {
        if (event.type === "training_started") {
          numSequences = event.data.num_sequences as number;
          started = event.data;
          continue; // the client does not advance `after` here
        }
        if (event.type === "gradient_step") {
          expect(numSequences, "training_started precedes gradient_step").toBeGreaterThanOrEqual(0);
          for (const value of Object.values(event.data)) expect(typeof value).toBe("number");
          gradientSteps.push(event.data as Record<string, number>);
          after = event.id;
        } else if (event.type === "training_ended" || event.type === "training_failed") {
          const checkpoints = await withRetries(() => rest("GET", `/v1/preview/models/${modelId}/checkpoints?limit=1&order=desc`, { key, base }));
          const step = (checkpoints.body as { data: { step: number }[] }).data[0]?.step ?? null;
          return { jobId, numSequences, started, gradientSteps, terminal: event, step };
        } else after = event.id;
        cursor = event.id;
      }
      if (!page.has_more || page.data.length === 0) break;
      cursor = page.data[page.data.length - 1]?.id ?? cursor;
    }
  }
}

/** The OpenAI SDK's retry policy (max_retries 2): 408, 409, 429 and 5xx, after Retry-After. */
async function withRetries(call: () => Promise<RestResponse>): Promise<RestResponse> {
  for (let attempt = 0; ; attempt++) {
    const res = await call();
    if (attempt >= 2 || !(res.status === 408 || res.status === 409 || res.status === 429 || res.status >= 500)) return res;
    const wait = Number(res.headers.get("retry-after") ?? "1");
    await new Promise((resolve) => setTimeout(resolve, (Number.isFinite(wait) ? Math.min(wait, 60) : 1) * 1000));
  }
}
