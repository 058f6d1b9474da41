// Axis tick labels: short enough for a 420 px screen (formatNumber is for tables and legends).
const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });

export function tickLabel(value: number): string {
  if (!Number.isFinite(value)) return "";
  const magnitude = Math.abs(value);
  if (magnitude === 0) return "0";
  if (magnitude >= 10_000) return compact.format(value);
  if (magnitude < 1e-3) return Number(value.toPrecision(2)).toExponential();
  return String(Number(value.toPrecision(3)));
}

/** Whole-step increments for the x axis (uPlot picks the first that leaves room between ticks). */
export const STEP_INCREMENTS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 20_000, 50_000, 100_000, 1_000_000];

/** The pixel width a y axis needs for its labels (about 7 px a character at the axis font). */
export function axisWidth(labels: readonly string[]): number {
  const longest = labels.reduce((most, label) => Math.max(most, label.length), 1);
  return Math.ceil(longest * 7 + 18);
}
