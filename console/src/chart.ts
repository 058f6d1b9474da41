// A line chart of metric histories over training steps, drawn as SVG (one polyline per series).
const COLORS = ["#2f5bea", "#e0703a", "#2a9d5c", "#9b4dca", "#c7385a"];

export function lineChart(series: Map<string, { step: number; value: number }[]>): SVGSVGElement {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", "0 0 600 220");
  svg.setAttribute("preserveAspectRatio", "none");
  const points = [...series.values()].flat();
  if (points.length === 0) return svg;
  const [minStep, maxStep] = [Math.min(...points.map((p) => p.step)), Math.max(...points.map((p) => p.step))];
  const [minValue, maxValue] = [Math.min(...points.map((p) => p.value)), Math.max(...points.map((p) => p.value))];
  const x = (step: number) => 30 + ((step - minStep) / Math.max(1, maxStep - minStep)) * 560;
  const y = (value: number) => 200 - ((value - minValue) / (maxValue - minValue || 1)) * 180;
  [...series.entries()].forEach(([name, values], index) => {
    const color = COLORS[index % COLORS.length] as string;
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", values.map((p) => `${x(p.step)},${y(p.value)}`).join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", color);
    line.setAttribute("stroke-width", "2");
    line.setAttribute("data-series", name);
    svg.append(line);
    for (const p of values) {
      const dot = document.createElementNS("http://www.w3.org/2000/svg", "circle");
      dot.setAttribute("cx", String(x(p.step)));
      dot.setAttribute("cy", String(y(p.value)));
      dot.setAttribute("r", "3");
      dot.setAttribute("fill", color);
      dot.setAttribute("data-point", `${name}@${p.step}`);
      svg.append(dot);
    }
  });
  return svg;
}

export function seriesColor(index: number): string {
  return COLORS[index % COLORS.length] as string;
}
