// The order panels and metric columns come in: what people look at first (rewards, then the other
// validation metrics), then loss and gradient norm, then the rest alphabetically.
function rank(name: string): number {
  const base = name.slice(name.lastIndexOf("/") + 1);
  if (name === "val/reward") return 0;
  if (name === "train/reward" || name === "reward") return 1;
  if (name.startsWith("val/")) return 2;
  if (base === "reward") return 3;
  if (base === "loss") return 4;
  if (base === "grad_norm") return 5;
  return 6;
}

/** Rewards, validation metrics, loss and grad_norm: the panels shown before "more metrics". */
export function isKeyMetric(name: string): boolean {
  return rank(name) < 6;
}

export function compareMetricNames(a: string, b: string): number {
  return rank(a) - rank(b) || a.localeCompare(b);
}

export function orderMetricNames(names: Iterable<string>): string[] {
  return [...names].sort(compareMetricNames);
}
