// Run curves: a panel per metric (each with its own y scale), grouped by the metric's prefix
// (validation, training, ...), a shared smoothing control, and a cursor linked across the page's panels. Drawn with uPlot: about 50 kB, canvas-based and made for
// exactly this (many numeric series over a shared x), fast enough to redraw live as points arrive;
// the bigger charting libraries buy nothing here but weight.
import "uplot/dist/uPlot.min.css";
import "./charts.css";
import { h } from "./dom.js";
import { PanelGroups } from "./charts/groups.js";
import { isKeyMetric, orderMetricNames } from "./charts/order.js";
import { MetricPanel, type RunSeries } from "./charts/panel.js";

export type { Point, RunSeries } from "./charts/panel.js";

const SMOOTHING_KEY = "srl-console-smoothing";
const MORE_OPEN_KEY = "srl-console-more-metrics";
let pages = 0;

function savedSmoothing(): number {
  const saved = Number(localStorage.getItem(SMOOTHING_KEY));
  return Number.isFinite(saved) && saved >= 0 && saved <= 0.99 ? saved : 0;
}

export class RunCharts {
  readonly element: HTMLElement;
  private readonly grid: PanelGroups;
  /** The other metrics' panels, folded until asked for (a run logs a dozen counters and timings). */
  private readonly more: HTMLDetailsElement;
  private readonly moreGrid: PanelGroups;
  private readonly moreSummary: HTMLElement;
  private readonly toolbar: HTMLElement;
  private readonly empty: HTMLElement;
  private readonly panels = new Map<string, MetricPanel>();
  private readonly syncKey = `run-charts-${++pages}`;
  private smoothing = savedSmoothing();

  /** `empty` is shown instead of the panels while there is no metric. */
  constructor(empty: HTMLElement) {
    this.empty = empty;
    const slider = h("input", { type: "range", name: "smoothing", min: "0", max: "0.99", step: "0.01", value: String(this.smoothing), "aria-label": "Smoothing" });
    const shown = h("output", { class: "smoothing-value" }, this.smoothing.toFixed(2));
    slider.addEventListener("input", () => {
      this.smoothing = Number(slider.value);
      shown.textContent = this.smoothing.toFixed(2);
      localStorage.setItem(SMOOTHING_KEY, String(this.smoothing));
      for (const panel of this.panels.values()) panel.setSmoothing(this.smoothing);
    });
    this.toolbar = h(
      "div",
      { class: "charts-toolbar" },
      h("label", { class: "smoothing", title: "Exponential moving average, as in W&B and TensorBoard; the raw values stay drawn faint" }, "Smoothing ", slider, shown),
      h("span", { class: "muted hint" }, "Drag to zoom, double-click to reset."),
    );
    this.grid = new PanelGroups();
    this.moreGrid = new PanelGroups();
    this.moreSummary = h("summary", {}, "More metrics");
    this.more = h("details", { class: "more-metrics" }, this.moreSummary, this.moreGrid.element);
    this.more.open = localStorage.getItem(MORE_OPEN_KEY) === "open";
    this.more.addEventListener("toggle", () => localStorage.setItem(MORE_OPEN_KEY, this.more.open ? "open" : "closed"));
    this.element = h("div", { class: "run-charts" }, this.toolbar, this.grid.element, this.more, this.empty);
    this.update(new Map());
  }

  /** Shows these metrics (metric name → one series per run), keeping the panels already drawn. */
  update(metrics: ReadonlyMap<string, readonly RunSeries[]>): void {
    const names = orderMetricNames(metrics.keys());
    for (const [name, panel] of this.panels) {
      if (metrics.has(name)) continue;
      panel.destroy();
      panel.element.remove();
      this.panels.delete(name);
    }
    // Key metrics first; the rest folded, unless there is nothing else to show.
    const key = names.filter(isKeyMetric);
    const main = key.length > 0 ? key : names;
    const rest = key.length > 0 ? names.filter((name) => !isKeyMetric(name)) : [];
    this.place(main, this.grid, metrics);
    this.place(rest, this.moreGrid, metrics);
    this.more.hidden = rest.length === 0;
    this.moreSummary.textContent = `More metrics (${rest.length})`;
    const none = names.length === 0;
    this.toolbar.hidden = none;
    this.grid.element.hidden = none;
    this.empty.hidden = !none;
  }

  private place(names: readonly string[], groups: PanelGroups, metrics: ReadonlyMap<string, readonly RunSeries[]>): void {
    const panels = names.map((name) => {
      let panel = this.panels.get(name);
      if (!panel) {
        panel = new MetricPanel(name, this.syncKey, this.smoothing);
        this.panels.set(name, panel);
      }
      return panel;
    });
    // Placed before their data: a new panel sizes its chart to the grid cell it is in.
    groups.place(panels);
    for (const panel of panels) panel.setRuns(metrics.get(panel.metric) ?? []);
  }

  destroy(): void {
    for (const panel of this.panels.values()) panel.destroy();
    this.panels.clear();
  }
}
