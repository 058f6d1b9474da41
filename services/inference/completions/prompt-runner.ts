// The prompts of one legacy completion request through the engine, a few at a time (a long list
// must not fill the engine's queue and get 429s for its own tail), as one stream of events tagged
// with their prompt's index. The first failure cancels the rest and is thrown.
import type { InferenceEngine } from "../engine/inference-engine.js";
import type { GenerateRequest } from "../engine/protocol.js";
import type { PromptEvent } from "./response-builder.js";
import type { RawPrompt } from "./plan.js";

/** Prompts in flight at once per request: enough to fill a context's sequences with n = 1. */
const PROMPTS_IN_FLIGHT = 4;

export async function* runPrompts(engine: InferenceEngine, plan: Omit<GenerateRequest, "id" | "rawPrompt">, prompts: RawPrompt[], signal: AbortSignal): AsyncGenerator<PromptEvent> {
  const cancel = new AbortController();
  const onAbort = () => cancel.abort();
  signal.addEventListener("abort", onAbort);
  const buffer: PromptEvent[] = [];
  let failure: { error: unknown } | undefined;
  let running = 0;
  let next = 0;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const run = async (index: number) => {
    try {
      for await (const event of engine.generate({ ...plan, rawPrompt: prompts[index] as RawPrompt }, cancel.signal)) {
        buffer.push({ ...event, prompt: index });
        notify();
      }
    } catch (error) {
      failure ??= { error };
      cancel.abort();
    } finally {
      running--;
      notify();
    }
  };
  const fill = () => {
    while (!failure && running < PROMPTS_IN_FLIGHT && next < prompts.length) {
      running++;
      void run(next++);
    }
  };
  try {
    for (;;) {
      fill();
      while (buffer.length > 0) yield buffer.shift() as PromptEvent;
      if (failure) throw failure.error;
      if (running === 0 && next >= prompts.length) return;
      if (signal.aborted) return;
      // While this generator was suspended in a yield, events may have arrived and runs ended with
      // no one to wake it: wait only when nothing is buffered and no slot is free for a prompt left
      // (else every run could have ended unseen, and nothing would ever wake this loop again).
      if (buffer.length > 0 || (running < PROMPTS_IN_FLIGHT && next < prompts.length)) continue;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    cancel.abort();
  }
}
