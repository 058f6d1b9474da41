// The model's saved evaluations, newest first: name, metric, each checkpoint's score, when; a
// button to open one and one to delete it.
import type { Evaluation } from "../../../gen/srl/v1/evaluations_pb.js";
import { h } from "../dom.js";
import { emptyState, timeCell } from "../format.js";
import { describeMetric } from "./metric-fields.js";
import { percent } from "./result-table.js";
import "../admin/stacked-table.css";

export interface SavedListActions {
  open(evaluation: Evaluation): void;
  remove(evaluation: Evaluation): void;
}

export function savedList(evaluations: readonly Evaluation[], actions: SavedListActions): HTMLElement {
  if (evaluations.length === 0) return emptyState("No saved evaluations yet. Run one above: it is kept with the model.");
  const rows = evaluations.map((evaluation) => {
    const name = evaluation.name || evaluation.id.slice(0, 8);
    return h(
      "tr",
      { "data-saved-id": evaluation.id },
      h("td", { "data-label": "Name" }, h("button", { type: "button", class: "link", "aria-label": `Open ${name}`, onclick: () => actions.open(evaluation) }, name)),
      h("td", { "data-label": "Metric" }, describeMetric(evaluation.metric)),
      h("td", { "data-label": "Scores" }, h("ul", { class: "ev-saved-scores" }, ...evaluation.scores.map((score) => h("li", {}, `step ${score.step}: ${score.passed}/${score.total} (${percent(score.score)})`)))),
      h("td", { "data-label": "Created" }, timeCell(evaluation.createdAt)),
      h("td", { "data-label": "" }, h("button", { type: "button", class: "secondary", "aria-label": `Delete ${name}`, onclick: () => actions.remove(evaluation) }, "Delete")),
    );
  });
  return h(
    "div",
    { class: "table-scroll" },
    h("table", { class: "ev-saved stacked-table" }, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Metric"), h("th", {}, "Scores"), h("th", {}, "Created"), h("th", {}, h("span", { class: "visually-hidden" }, "Actions")))), h("tbody", {}, ...rows)),
  );
}
