// One column of replies: the model it asks, the text as it streams, how it ended and its numbers.
// A failure shows in the column (the other column and the page carry on).
import { h } from "../dom.js";
import { duration, formatNumber } from "../format.js";
import { streamReply, tokensPerSecond, type ChatRequest, type ReplyState } from "./reply-stream.js";

export interface ReplyColumn {
  element: HTMLElement;
  /** Streams `request` into the column (clearing what was there); never throws. */
  run(request: ChatRequest, title: string, signal: AbortSignal): Promise<ReplyState>;
}

export function replyColumn(name: string): ReplyColumn {
  const title = h("h2", { class: "pg-column-title" });
  const finish = h("span", { class: "pg-finish", "data-testid": "finish" });
  const reasoning = h("pre", { class: "pg-reasoning" });
  const reasoningBox = h("details", { class: "pg-reasoning-box", hidden: "" }, h("summary", {}, "Reasoning"), reasoning);
  const output = h("pre", { class: "pg-output", "data-testid": "output", "aria-live": "polite" });
  const error = h("p", { class: "pg-column-error", role: "alert", "data-testid": "column-error", hidden: "" });
  const tokens = h("dd", { "data-testid": "usage" });
  const firstToken = h("dd", { "data-testid": "first-token" });
  const speed = h("dd", { "data-testid": "speed" });
  const stats = h("dl", { class: "pg-stats" }, h("div", {}, h("dt", {}, "Tokens"), tokens), h("div", {}, h("dt", {}, "First token"), firstToken), h("div", {}, h("dt", {}, "Speed"), speed));
  const element = h(
    "article",
    { class: "pg-column", "data-column": name, "data-state": "idle" },
    h("header", { class: "pg-column-header" }, title, finish),
    // The numbers above the text: they stay in sight however long the reply grows.
    stats,
    reasoningBox,
    output,
    error,
  );

  const render = (state: ReplyState) => {
    // Follow the text as it grows unless the person scrolled up to read.
    const following = output.scrollHeight - output.scrollTop - output.clientHeight < 32;
    element.dataset.state = state.outcome;
    // Append what is new rather than redrawing the whole text (a new run starts from empty).
    const shown = output.textContent ?? "";
    if (state.text.startsWith(shown)) output.append(state.text.slice(shown.length));
    else output.textContent = state.text;
    if (following) output.scrollTop = output.scrollHeight;
    reasoning.textContent = state.reasoning;
    reasoningBox.hidden = state.reasoning === "";
    const ending = endingOf(state);
    finish.textContent = ending.text;
    finish.title = ending.title;
    finish.dataset.finish = ending.word;
    error.hidden = state.error === null;
    error.textContent = state.error ?? "";
    renderUsage(tokens, state);
    firstToken.textContent = state.firstTokenAt === null ? "—" : milliseconds(state.firstTokenAt - state.sentAt);
    const rate = tokensPerSecond(state);
    speed.textContent = rate === null ? "—" : `${formatNumber(Math.round(rate))} tokens/s`;
    speed.title = rate === null ? "Too short a reply to measure in the browser" : "Tokens after the first, per second, as the browser received them";
  };

  // Hundreds of chunks a second: draw at most once a frame (layout of a long reply is not free),
  // but at once when a run starts (clearing the last reply) and ends (a hidden tab gets no frames).
  let frame: number | null = null;
  let starting = false;
  const schedule = (state: ReplyState) => {
    if (starting || state.outcome !== "streaming") {
      starting = false;
      if (frame !== null) cancelAnimationFrame(frame);
      frame = null;
      render(state);
    } else if (frame === null) {
      frame = requestAnimationFrame(() => ((frame = null), render(state)));
    }
  };

  return {
    element,
    run(request, heading, signal) {
      // Counts the runs, so a reader (or a test) can tell this reply from the previous one.
      element.dataset.run = String(Number(element.dataset.run ?? "0") + 1);
      starting = true;
      title.textContent = heading;
      title.title = request.model ?? heading;
      return streamReply(request, signal, schedule);
    },
  };
}

/** The badge: the API's finish reason, or what happened instead. */
function endingOf(state: ReplyState): { word: string; text: string; title: string } {
  switch (state.outcome) {
    case "streaming":
      return { word: "streaming", text: "streaming…", title: "The reply is still coming" };
    case "stopped":
      return { word: "stopped", text: "stopped", title: "Stopped with the Stop button; the text so far is kept" };
    case "failed":
      return { word: "error", text: "error", title: "The request failed" };
    case "finished": {
      const reason = state.finishReason ?? "unknown";
      return { word: reason, text: `finish: ${reason}`, title: FINISH_MEANING[reason] ?? "The finish reason the API gave" };
    }
  }
}

const FINISH_MEANING: Record<string, string> = {
  stop: "The model ended its reply or hit a stop sequence",
  length: "The reply reached max tokens (or the context length)",
  tool_calls: "The model called a tool",
  abort: "The server ended the generation",
};

function renderUsage(cell: HTMLElement, state: ReplyState): void {
  const usage = state.usage;
  if (!usage) {
    for (const key of ["promptTokens", "completionTokens", "totalTokens"]) delete cell.dataset[key];
    cell.textContent = "—";
    return;
  }
  cell.dataset.promptTokens = String(usage.promptTokens);
  cell.dataset.completionTokens = String(usage.completionTokens);
  cell.dataset.totalTokens = String(usage.totalTokens);
  const soFar = state.outcome === "finished" ? "" : " so far";
  cell.textContent = `${formatNumber(usage.promptTokens)} prompt + ${formatNumber(usage.completionTokens)} completion = ${formatNumber(usage.totalTokens)}${soFar}`;
}

function milliseconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : duration(ms);
}
