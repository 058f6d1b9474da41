// One metric's chart: its own y scale, step ticks on x, the values under the cursor in the legend,
// each run's raw series drawn faint behind its smoothed one, and an optional log scale. The data
// is replaced in place (setData) so refreshes keep the person's zoom, smoothing and scale.
import uPlot from "uplot";
import { h } from "../dom.js";
import { formatNumber } from "../format.js";
import { lineDash, markerIcon, markerPaths, markersFit, markerShape } from "./markers.js";
import { faint, seriesColor } from "./palette.js";
import { smooth } from "./smoothing.js";
import { axisWidth, STEP_INCREMENTS, tickLabel } from "./ticks.js";

export interface Point {
  step: number;
  value: number;
}

/** One run's history of one metric (points in any order; one value per step). */
export interface RunSeries {
  label: string;
  points: readonly Point[];
}

const AXIS = { stroke: "#69707d", grid: { stroke: "#eef0f4", width: 1 }, ticks: { stroke: "#dde1e8", width: 1, size: 4 } };
const LOG_DISTRIBUTION = 3 as uPlot.Scale.Distr;
const LINEAR_DISTRIBUTION = 1 as uPlot.Scale.Distr;

/** A panel whose runs have one point each is drawn short: there is no curve to read yet. */
function heightFor(width: number, single: boolean): number {
  if (single) return 140;
  return width < 420 ? 190 : 220;
}

/**
 * The step axis: a single step sits in the middle with half a step either side (one tick, its own;
 * uPlot would pad it to 0..10, a misleading axis for step 5), more steps get a little room at the
 * ends so the first and last markers are not cut by the frame. Ticks fall on whole steps only.
 */
function stepRange(chart: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  const steps = chart.data?.[0];
  if (steps?.length === 1) {
    const only = steps[0] as number;
    return [only - 0.5, only + 0.5];
  }
  if (min === null || max === null) return [0, 1];
  if (min === max) return [min - 0.5, max + 0.5];
  const pad = (max - min) * 0.03;
  return [min - pad, max + pad];
}

/** A whole step's tick label; none for a fraction (zoomed in between two steps) and no "-0". */
function stepLabel(split: number): string {
  if (!Number.isInteger(split)) return "";
  return formatNumber(split === 0 ? 0 : split);
}

/** A value range for the linear y scale: uPlot's, except that a flat series is not padded to 0..100. */
function valueRange(_chart: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null) return [0, 1];
  if (min === max) {
    if (min === 0) return [0, 1];
    const pad = Math.abs(min) * 0.1;
    return [min - pad, max + pad];
  }
  return uPlot.rangeNum(min, max, 0.1, true);
}

/** A cheap fingerprint of the data (lengths, sums, last values): a job page redraws often. */
function summarize(data: uPlot.AlignedData): string {
  return data
    .map((column) => {
      let sum = 0;
      for (const value of column) if (value != null) sum += value;
      return `${column.length}:${sum}:${column[column.length - 1] ?? ""}`;
    })
    .join("|");
}

export class MetricPanel {
  readonly element: HTMLElement;
  private readonly plot: HTMLElement;
  private readonly latest: HTMLElement;
  private readonly logInput: HTMLInputElement;
  private readonly logLabel: HTMLElement;
  private readonly observer: ResizeObserver;
  private chart: uPlot | null = null;
  private runs: RunSeries[] = [];
  /** What the chart was built for: the runs' labels (a change needs a new chart, not new data). */
  private shape = "";
  private dataSignature = "";
  private log = false;
  /** Every run has at most one point: a short panel, the value written out. */
  private single = false;
  /** Per series index: whether its markers were drawn at the last redraw. */
  private readonly markersShown = new Map<number, boolean>();

  constructor(
    readonly metric: string,
    private readonly syncKey: string,
    private smoothing: number,
  ) {
    this.latest = h("span", { class: "panel-latest" });
    this.logInput = h("input", { type: "checkbox", name: "log", "aria-label": `Log scale for ${metric}` });
    this.logInput.addEventListener("change", () => this.setLog(this.logInput.checked));
    this.logLabel = h("label", { class: "panel-log", title: "Logarithmic y axis (offered when every value is above 0)" }, this.logInput, " log");
    this.logLabel.hidden = true;
    this.plot = h("div", { class: "panel-plot" });
    this.element = h(
      "figure",
      { class: "panel", "data-metric": metric, "data-scale": "linear" },
      h("figcaption", {}, h("span", { class: "panel-name", title: metric }, metric), this.latest, this.logLabel),
      this.plot,
    );
    // Panels follow the page's width (window resizes, a phone turned around).
    this.observer = new ResizeObserver(() => this.fit());
    this.observer.observe(this.plot);
  }

  setRuns(runs: readonly RunSeries[]): void {
    this.runs = runs.map((run) => ({ label: run.label, points: [...run.points].sort((a, b) => a.step - b.step) }));
    const values = this.runs.flatMap((run) => run.points.map((point) => point.value));
    const positive = values.length > 0 && values.every((value) => value > 0);
    this.logLabel.hidden = !positive;
    if (!positive && this.log) {
      // A value at or below 0 arrived: back to a linear scale (rebuilt by render below).
      this.log = false;
      this.logInput.checked = false;
      this.element.dataset.scale = "linear";
      this.shape = "";
    }
    this.element.dataset.points = String(values.length);
    this.element.dataset.runs = String(this.runs.length);
    this.latest.textContent = this.latestText();
    this.latest.classList.toggle("many", this.runs.length > 1);
    const single = values.length > 0 && this.runs.every((run) => run.points.length <= 1);
    this.element.dataset.single = String(single);
    if (single !== this.single) {
      this.single = single;
      if (this.chart) this.chart.setSize({ width: this.chart.width, height: heightFor(this.chart.width, single) });
    }
    this.render();
  }

  /**
   * One run: its newest value and step. Several runs that each have one point at the same step:
   * each run's value at that step (a dot per run says less than the numbers).
   */
  private latestText(): string {
    if (this.runs.length === 1) {
      const only = this.runs[0]?.points.at(-1);
      return only ? `${formatNumber(only.value)} at step ${formatNumber(only.step)}` : "";
    }
    const drawn = this.runs.filter((run) => run.points.length > 0);
    if (drawn.length === 0 || drawn.some((run) => run.points.length > 1)) return "";
    const firsts = drawn.map((run) => ({ label: run.label, point: run.points[0] as Point }));
    const step = firsts[0]?.point.step ?? 0;
    if (firsts.some((first) => first.point.step !== step)) return "";
    return `step ${formatNumber(step)}: ${firsts.map((first) => `${first.label} ${formatNumber(first.point.value)}`).join(", ")}`;
  }

  setSmoothing(weight: number): void {
    if (weight === this.smoothing) return;
    this.smoothing = weight;
    this.render();
  }

  setLog(on: boolean): void {
    this.log = on;
    this.logInput.checked = on;
    this.element.dataset.scale = on ? "log" : "linear";
    this.shape = ""; // a scale's distribution is fixed when a uPlot chart is made
    this.render();
  }

  destroy(): void {
    this.observer.disconnect();
    this.chart?.destroy();
    this.chart = null;
  }

  private render(): void {
    const data = this.alignedData();
    // Which runs have points is part of it too: the markers' offsets are spread over those.
    const shape = `${this.log}|${this.runs.map((run) => `${run.points.length > 0 ? "+" : "-"}${run.label}`).join("\n")}`;
    const signature = summarize(data);
    if (this.chart && shape === this.shape) {
      if (signature === this.dataSignature) return; // nothing new: keep the zoom
      this.dataSignature = signature;
      this.chart.setData(data);
      return;
    }
    this.chart?.destroy();
    this.shape = shape;
    this.dataSignature = signature;
    const width = this.plot.clientWidth || 360;
    this.markersShown.clear();
    this.chart = new uPlot(this.options(width), data, this.plot);
    this.drawLegendMarkers();
  }

  /** The legend's colour boxes become each run's marker shape and line dash. */
  private drawLegendMarkers(): void {
    const rows = this.plot.querySelectorAll<HTMLElement>(".u-legend .u-series");
    this.runs.forEach((_run, index) => {
      const marker = rows[2 + index * 2]?.querySelector<HTMLElement>(".u-marker");
      if (!marker) return;
      marker.classList.add("has-icon");
      marker.replaceChildren(markerIcon(index, seriesColor(index)));
    });
  }

  /** uPlot's layout: one x of all steps, then per run its raw series and its smoothed one. */
  private alignedData(): uPlot.AlignedData {
    const steps = [...new Set(this.runs.flatMap((run) => run.points.map((point) => point.step)))].sort((a, b) => a - b);
    const at = new Map(steps.map((step, index) => [step, index]));
    const columns: (number | null)[][] = [];
    let smoothedLast: number | undefined;
    for (const run of this.runs) {
      const raw: (number | null)[] = steps.map(() => null);
      const smoothed: (number | null)[] = steps.map(() => null);
      const values = smooth(
        run.points.map((point) => point.value),
        this.smoothing,
      );
      run.points.forEach((point, index) => {
        const column = at.get(point.step) as number;
        raw[column] = point.value;
        smoothed[column] = values[index] ?? null;
      });
      smoothedLast ??= values.at(-1);
      columns.push(raw, smoothed);
    }
    this.element.dataset.smoothedLast = smoothedLast === undefined ? "" : formatNumber(smoothedLast);
    this.element.dataset.smoothing = String(this.smoothing);
    return [steps, ...columns];
  }

  private options(width: number): uPlot.Options {
    const series: uPlot.Series[] = [{ label: "step", value: (_chart, value) => (value == null ? "—" : formatNumber(value)) }];
    const drawn = this.runs.filter((run) => run.points.length > 0).length;
    let rank = 0;
    this.runs.forEach((run, index) => {
      const placed = run.points.length > 0 ? rank++ : 0;
      const color = seriesColor(index);
      series.push(
        { label: `${run.label} (raw)`, class: "raw", stroke: faint(color), width: 1, spanGaps: true, points: { show: false } },
        {
          label: run.label,
          stroke: color,
          width: 2,
          dash: lineDash(index),
          spanGaps: true,
          value: (chart, value, seriesIndex, index) => this.legendValue(chart, value, seriesIndex, index),
          points: {
            show: (chart, seriesIndex, idx0, idx1) => {
              const shown = markersFit(idx1 - idx0 + 1, chart.bbox.width / (window.devicePixelRatio || 1));
              this.markersShown.set(seriesIndex, shown);
              return shown;
            },
            size: 9,
            width: 1,
            fill: color,
            stroke: "#fff",
            paths: markerPaths(index, placed, drawn),
          },
        },
      );
    });
    return {
      width,
      height: heightFor(width, this.single),
      series,
      scales: {
        x: { time: false, range: stepRange },
        y: this.log ? { distr: LOG_DISTRIBUTION, log: 10 } : { distr: LINEAR_DISTRIBUTION, range: valueRange },
      },
      axes: [
        {
          ...AXIS,
          label: "step",
          size: 24,
          labelSize: 16,
          labelGap: 0,
          labelFont: "12px system-ui, sans-serif",
          font: "11px system-ui, sans-serif",
          incrs: STEP_INCREMENTS,
          space: 48,
          values: (_chart, splits) => {
            const labels = splits.map(stepLabel);
            this.element.dataset.xTicks = labels.filter(Boolean).join(" ");
            return labels;
          },
        },
        {
          ...AXIS,
          font: "11px system-ui, sans-serif",
          space: 28,
          size: (_chart, values) => axisWidth(values ?? []),
          values: (_chart, splits) => {
            const labels = splits.map((split) => tickLabel(split));
            this.element.dataset.yTicks = labels.join(" ");
            return labels;
          },
        },
      ],
      cursor: {
        // Every panel of the page shows the same step under the cursor (matched by step value).
        sync: { key: this.syncKey, scales: ["x", null] },
        y: false, // a horizontal line would sit at the same height in panels of unrelated scales
        drag: { x: true, y: false },
        points: { size: 7 },
      },
      legend: { live: true },
      hooks: {
        draw: [
          (chart) => {
            const { min, max } = chart.scales.y ?? {};
            this.element.dataset.yRange = min === undefined || max === undefined ? "" : `${min} ${max}`;
            // What the tests (and a curious reader of the DOM) can check: markers drawn, and whose.
            const withPoints = this.runs.flatMap((run, index) => (run.points.length > 0 ? [index] : []));
            const shown = withPoints.filter((index) => this.markersShown.get(2 + index * 2));
            this.element.dataset.markers = withPoints.length === 0 ? "none" : shown.length === withPoints.length ? "shown" : shown.length > 0 ? "some" : "hidden";
            this.element.dataset.markerShapes = withPoints.map((index) => markerShape(index)).join(" ");
          },
        ],
      },
    };
  }

  /** The smoothed value under the cursor, with the raw one beside it while smoothing is on. */
  private legendValue(chart: uPlot, value: number | null, seriesIndex: number, index: number | null): string {
    if (value == null) return "—";
    const raw = index === null ? null : chart.data[seriesIndex - 1]?.[index];
    if (this.smoothing > 0 && raw != null && raw !== value) return `${formatNumber(value)} (raw ${formatNumber(raw)})`;
    return formatNumber(value);
  }

  private fit(): void {
    const width = Math.floor(this.plot.clientWidth);
    if (!this.chart || width <= 0) return;
    if (width !== this.chart.width) this.chart.setSize({ width, height: heightFor(width, this.single) });
  }
}
