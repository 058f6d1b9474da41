// Exponential moving average as TensorBoard and W&B draw it: debiased, so the first points are not
// pulled toward zero. `weight` 0 leaves the series as it is; 0.99 is nearly flat.
export function smooth(values: readonly number[], weight: number): number[] {
  if (weight <= 0) return [...values];
  const out: number[] = [];
  let last = 0;
  let count = 0;
  for (const value of values) {
    last = last * weight + (1 - weight) * value;
    count++;
    out.push(last / (1 - weight ** count));
  }
  return out;
}
