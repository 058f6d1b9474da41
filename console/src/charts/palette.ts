// Series colours: distinct at a glance, and readable faint (the raw line behind a smoothed one).
const COLORS = ["#2f5bea", "#e0703a", "#2a9d5c", "#9b4dca", "#c7385a", "#1d9bb2", "#8a6d1f", "#5b6473"];

export function seriesColor(index: number): string {
  return COLORS[index % COLORS.length] as string;
}

/** The colour at `alpha` opacity (for #rrggbb colours). */
export function faint(color: string, alpha = 0.28): string {
  const value = Number.parseInt(color.slice(1), 16);
  return `rgba(${(value >> 16) & 255}, ${(value >> 8) & 255}, ${value & 255}, ${alpha})`;
}
