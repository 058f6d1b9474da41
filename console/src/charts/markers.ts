// Point markers that tell runs apart where colour alone cannot (identical values, colour-blind
// readers, a grey print): each run gets a shape and a line dash, and its markers sit a few pixels
// left or right of the step (the line itself stays on the step), so runs with the same value at the
// same step show side by side instead of one hiding the others.
import type uPlot from "uplot";

export type MarkerShape = "circle" | "square" | "triangle" | "diamond" | "triangle-down" | "cross";

const SHAPES: readonly MarkerShape[] = ["circle", "square", "triangle", "diamond", "triangle-down", "cross"];
const DASHES: readonly number[][] = [[], [7, 4], [2, 3], [10, 3, 2, 3]];
/** Pixels between neighbouring runs' markers at a step, and the share of the gap to the next step they may use. */
const JITTER_PX = 8;
const JITTER_SHARE = 0.5;
/** Below this many pixels between steps, markers would merge into the line: only the line is drawn. */
const MIN_PX_PER_POINT = 9;

export function markerShape(runIndex: number): MarkerShape {
  return SHAPES[runIndex % SHAPES.length] as MarkerShape;
}

/** The line dash of a run: solid for the first, then dashes that differ run to run. */
export function lineDash(runIndex: number): number[] {
  return DASHES[runIndex % DASHES.length] as number[];
}

/**
 * The horizontal offset (CSS pixels) of a run's markers: the runs centred on the step, spread over
 * at most half the gap between two steps (`stepGapPx`), so a marker never reaches the next step.
 */
export function jitterOffset(runIndex: number, runs: number, stepGapPx: number): number {
  if (runs < 2) return 0;
  const step = Math.min(JITTER_PX, (stepGapPx * JITTER_SHARE) / (runs - 1));
  return (runIndex - (runs - 1) / 2) * step;
}

/** Whether markers fit: few points for the width (a single point always shows). */
export function markersFit(points: number, plotWidthCss: number): boolean {
  return points <= 2 || plotWidthCss / points >= MIN_PX_PER_POINT;
}

/** What a shape is drawn with: a canvas Path2D, or the recorder that writes it as SVG path data. */
type PathSink = Pick<Path2D, "moveTo" | "lineTo" | "closePath" | "rect"> & { arc(x: number, y: number, r: number, start: number, end: number): void };

/** Adds one marker of `shape` (radius `r`, canvas pixels) centred at x, y to `path`. */
function addShape(path: PathSink, shape: MarkerShape, x: number, y: number, r: number): void {
  switch (shape) {
    case "circle":
      path.moveTo(x + r, y);
      path.arc(x, y, r, 0, Math.PI * 2);
      return;
    case "square": {
      const s = r * 0.88;
      path.rect(x - s, y - s, s * 2, s * 2);
      return;
    }
    case "triangle":
    case "triangle-down": {
      const d = shape === "triangle" ? 1 : -1;
      const s = r * 1.15;
      path.moveTo(x, y - s * d);
      path.lineTo(x + s, y + s * 0.8 * d);
      path.lineTo(x - s, y + s * 0.8 * d);
      path.closePath();
      return;
    }
    case "diamond": {
      const s = r * 1.2;
      path.moveTo(x, y - s);
      path.lineTo(x + s, y);
      path.lineTo(x, y + s);
      path.lineTo(x - s, y);
      path.closePath();
      return;
    }
    case "cross": {
      const s = r * 0.45;
      const e = r * 1.1;
      // A plus sign as one closed outline, so it fills like the other shapes.
      path.moveTo(x - s, y - e);
      path.lineTo(x + s, y - e);
      path.lineTo(x + s, y - s);
      path.lineTo(x + e, y - s);
      path.lineTo(x + e, y + s);
      path.lineTo(x + s, y + s);
      path.lineTo(x + s, y + e);
      path.lineTo(x - s, y + e);
      path.lineTo(x - s, y + s);
      path.lineTo(x - e, y + s);
      path.lineTo(x - e, y - s);
      path.lineTo(x - s, y - s);
      path.closePath();
      return;
    }
  }
}

/**
 * uPlot's point builder for run `runIndex`: its shape, shifted along x by its `rank` among the
 * `runs` that have points in this panel (jitterOffset; runs with no point take no room).
 */
export function markerPaths(runIndex: number, rank: number, runs: number): uPlot.Series.Points.PathBuilder {
  const shape = markerShape(runIndex);
  return (chart, seriesIndex, idx0, idx1, filtered) => {
    const series = chart.series[seriesIndex];
    const xs = chart.data[0];
    const ys = chart.data[seriesIndex];
    if (!series || !ys) return null;
    const ratio = window.devicePixelRatio || 1;
    // The average gap between the steps in view (a lone step has the whole width around it).
    const first = xs[idx0];
    const last = xs[idx1];
    const gap = idx1 > idx0 && first != null && last != null ? Math.abs(chart.valToPos(last, "x") - chart.valToPos(first, "x")) / (idx1 - idx0) : Infinity;
    const offsetCss = jitterOffset(rank, runs, gap);
    const size = series.points?.size ?? 8;
    const r = (size / 2) * ratio;
    const { left, top, width, height } = chart.bbox;
    const clip = new Path2D();
    clip.rect(left - r * 3, top - r * 3, width + r * 6, height + r * 6);
    const fill = new Path2D();
    const draw = (index: number) => {
      const value = ys[index];
      const step = xs[index];
      if (value == null || step == null) return;
      const x = chart.valToPos(step, "x", true) + offsetCss * ratio;
      const y = chart.valToPos(value, series.scale ?? "y", true);
      addShape(fill, shape, x, y, r);
    };
    if (filtered) filtered.forEach(draw);
    else for (let index = idx0; index <= idx1; index++) draw(index);
    // 1 | 2: clip both the fill and the outline to the plot (plus a margin for markers at its edges).
    return { stroke: fill, fill, clip, flags: 3 };
  };
}

const SVG = "http://www.w3.org/2000/svg";

/** A run's marker and dash as a small inline SVG, for legends and lists of runs. */
export function markerIcon(runIndex: number, color: string): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 28 14");
  svg.setAttribute("width", "28");
  svg.setAttribute("height", "14");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "marker-icon");
  svg.dataset.shape = markerShape(runIndex);
  const line = document.createElementNS(SVG, "line");
  for (const [name, value] of Object.entries({ x1: "1", y1: "7", x2: "27", y2: "7", stroke: color, "stroke-width": "2", "stroke-dasharray": lineDash(runIndex).join(" ") || "none" })) line.setAttribute(name, value);
  const shape = document.createElementNS(SVG, "path");
  const path = new ShapeRecorder();
  addShape(path, markerShape(runIndex), 14, 7, 4.5);
  for (const [name, value] of Object.entries({ d: path.d, fill: color, stroke: "#fff", "stroke-width": "1" })) shape.setAttribute(name, value);
  svg.append(line, shape);
  return svg;
}

/** Records the Path2D calls addShape makes as SVG path data (the same shapes in the legend). */
class ShapeRecorder implements PathSink {
  d = "";
  moveTo(x: number, y: number): void {
    this.d += `M${x} ${y}`;
  }
  lineTo(x: number, y: number): void {
    this.d += `L${x} ${y}`;
  }
  closePath(): void {
    this.d += "Z";
  }
  rect(x: number, y: number, w: number, h: number): void {
    this.d += `M${x} ${y}h${w}v${h}h${-w}Z`;
  }
  arc(x: number, y: number, r: number): void {
    this.d += `M${x - r} ${y}a${r} ${r} 0 1 0 ${r * 2} 0a${r} ${r} 0 1 0 ${-r * 2} 0`;
  }
}
