// One evaluation as the page shows it: each checkpoint's score side by side (passed/total and %),
// then a row per prompt with every checkpoint's output marked pass or fail (a word and a symbol,
// not colour alone) and, on failures, why.
import type { Evaluation, EvaluationOutput } from "../../../gen/srl/v1/evaluations_pb.js";
import { h } from "../dom.js";
import { duration, timeLong } from "../format.js";
import { describeMetric } from "./metric-fields.js";

export function stepLabel(step: number): string {
  return step === 0 ? "step 0 (base model)" : `step ${step}`;
}

export function percent(score: number): string {
  return `${(score * 100).toFixed(score === 0 || score === 1 ? 0 : 1)}%`;
}

export function evaluationResult(evaluation: Evaluation): HTMLElement {
  const scores = h(
    "div",
    { class: "ev-scores" },
    ...evaluation.steps.map((step) => {
      const score = evaluation.scores.find((entry) => entry.step === step);
      return h(
        "div",
        { class: "ev-score", "data-score-step": String(step), "data-passed": String(score?.passed ?? 0), "data-total": String(score?.total ?? 0) },
        h("div", { class: "ev-score-step" }, stepLabel(step)),
        h("div", { class: "ev-score-value" }, score ? percent(score.score) : "—"),
        h("div", { class: "ev-score-count" }, score ? `${score.passed} of ${score.total} passed` : "no score"),
      );
    }),
  );
  const head = h("tr", {}, h("th", { class: "num" }, "#"), h("th", {}, "Prompt"), h("th", {}, "Expected"), ...evaluation.steps.map((step) => h("th", {}, stepLabel(step))));
  const rows = evaluation.rows.map((row, index) =>
    h(
      "tr",
      { "data-row": String(index) },
      h("td", { class: "num", "data-label": "#" }, String(index + 1)),
      h("td", { "data-label": "Prompt" }, h("div", { class: "ev-text", "data-prompt": "" }, row.prompt)),
      h("td", { "data-label": "Expected" }, row.expected === undefined ? h("span", { class: "muted" }, "—") : h("div", { class: "ev-text", "data-expected": "" }, row.expected)),
      ...evaluation.steps.map((step) => {
        const output = row.outputs.find((entry) => entry.step === step);
        return h("td", { "data-label": stepLabel(step), "data-output-step": String(step) }, output ? outputCell(output) : h("span", { class: "muted" }, "no output"));
      }),
    ),
  );
  const facts = [describeMetric(evaluation.metric), `${evaluation.rows.length} prompts`, `max ${evaluation.maxTokens} tokens`, evaluation.temperature === 0 ? "greedy" : `temperature ${evaluation.temperature}`, `took ${duration(evaluation.duration * 1000)}`, timeLong(evaluation.createdAt)];
  return h(
    "div",
    { class: "ev-result", "data-evaluation-id": evaluation.id },
    h("h2", { tabindex: "-1" }, evaluation.name || "Evaluation"),
    h("p", { class: "muted ev-facts" }, facts.join(" · ")),
    evaluation.system ? h("p", { class: "ev-system" }, h("strong", {}, "System prompt: "), evaluation.system) : null,
    scores,
    h("div", { class: "table-scroll" }, h("table", { class: "ev-table" }, h("thead", {}, head), h("tbody", {}, ...rows))),
  );
}

function outputCell(output: EvaluationOutput): HTMLElement {
  return h(
    "div",
    { class: `ev-output ${output.passed ? "pass" : "fail"}`, "data-passed": String(output.passed) },
    h("span", { class: "ev-mark" }, output.passed ? "✓ pass" : "✗ fail"),
    h("div", { class: "ev-text", "data-output": "" }, output.text),
    output.text === "" ? h("span", { class: "muted" }, "(empty output)") : null,
    !output.passed && output.reason ? h("div", { class: "ev-reason" }, output.reason) : null,
    output.finishReason === "length" ? h("div", { class: "ev-cut muted" }, "cut at max tokens") : null,
  );
}
