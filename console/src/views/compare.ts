// Runs side by side: the chosen models' curves overlaid, one panel per metric grouped by family
// (validation, training; the rest folded), one series per model with its own colour, marker shape
// and dash (so runs with equal values stay apart), a cursor linked across the panels. The choice lives in the address
// (`#/compare?models=a,b`), so a comparison can be shared.
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import { readable } from "../api.js";
import { RunCharts, type RunSeries } from "../chart.js";
import { markerIcon } from "../charts/markers.js";
import { seriesColor } from "../charts/palette.js";
import { h, showError } from "../dom.js";
import { emptyState } from "../format.js";
import { keepLoaded, type ViewContext } from "../view.js";
import { crumbs, modelTitle } from "./links.js";
import { findModels, RunHistory } from "./run-data.js";
import "./views.css";

const REFRESH_MS = 3000;

export async function compareView(context: ViewContext): Promise<HTMLElement> {
  const ids = [...new Set((context.query.get("models") ?? "").split(",").map((id) => id.trim()).filter(Boolean))];
  const heading = h("section", { class: "page-header run-view" }, crumbs("compare runs"), h("h1", {}, "Compare runs"));
  if (ids.length === 0) {
    heading.append(emptyState("No runs chosen. Tick two or more models on the models list, then press “Compare runs”."), h("p", {}, h("a", { href: "#/" }, "Go to the models.")));
    return heading;
  }
  let chosen: Model[];
  try {
    chosen = await findModels(ids, context.signal);
  } catch (error) {
    if (!context.signal.aborted) showError(readable(error), error);
    return heading;
  }
  const missing = ids.length - chosen.length;
  heading.append(
    h(
      "ul",
      { class: "run-keys" },
      ...chosen.map((model, index) =>
        h("li", { "data-model-id": model.id }, markerIcon(index, seriesColor(index)), " ", h("a", { href: `#/models/${model.id}` }, modelTitle(model)), h("span", { class: "muted" }, ` on ${model.baseModel}`)),
      ),
    ),
    missing > 0 ? h("p", { class: "muted" }, `${missing} of the chosen models no longer exist${missing === 1 ? "s" : ""}.`) : "",
  );
  const charts = new RunCharts(emptyState("None of these runs has logged a metric yet."));
  context.signal.addEventListener("abort", () => charts.destroy());
  const histories = chosen.map((model) => ({ model, history: new RunHistory(model.runId) }));
  const labels = uniqueLabels(chosen);

  await keepLoaded(context, REFRESH_MS, async () => {
    await Promise.all(histories.map(({ history }) => history.load(context.signal)));
    if (context.signal.aborted) return;
    // Every model gets a series in every panel (possibly empty), so a model keeps its colour.
    const byMetric = new Map<string, RunSeries[]>();
    const all = histories.map(({ history }) => history.series());
    const names = new Set(all.flatMap((series) => [...series.keys()]));
    for (const name of names) byMetric.set(name, all.map((series, index) => ({ label: labels[index] as string, points: series.get(name) ?? [] })));
    charts.update(byMetric);
  });
  return h("div", { class: "compare-page run-view" }, heading, h("section", { class: "charts-section" }, charts.element));
}

/** The models' names as legends show them: the name alone, or project/name where names repeat. */
function uniqueLabels(chosen: readonly Model[]): string[] {
  const counts = new Map<string, number>();
  for (const model of chosen) counts.set(model.name, (counts.get(model.name) ?? 0) + 1);
  return chosen.map((model) => ((counts.get(model.name) ?? 0) > 1 ? modelTitle(model) : model.name));
}
