// A group's reward spread on one line: a dot per trajectory on the batch's reward scale (its ends
// labelled), the group's mean as a tick labelled with its value, so groups with no spread (no
// learning signal for RL) stand out. Positioned HTML rather than SVG: dots stay round at any width.
// The strip is one image to assistive technology, named with everything it shows.
import { h } from "../dom.js";
import { formatNumber } from "../format.js";

export function spreadStrip(rewards: number[], [low, high]: [number, number], mean: number | null): HTMLElement {
  const fraction = (value: number) => (value - low) / (high - low || 1);
  const at = (value: number) => `${fraction(value) * 100}%`;
  const track = h("div", { class: "spread-track" });
  if (mean !== null) {
    const label = `mean ${formatNumber(mean)}`;
    // The label hangs from the tick; near an end it is anchored inward so it stays on the track.
    const anchor = fraction(mean) < 0.15 ? "start" : fraction(mean) > 0.85 ? "end" : "middle";
    track.append(
      h("span", { class: "spread-mean", style: `left:${at(mean)}`, title: label, "data-mean": String(mean) }),
      h("span", { class: `spread-mean-label anchor-${anchor}`, style: `left:${at(mean)}`, "data-testid": "mean-label" }, label),
    );
  }
  for (const reward of rewards) track.append(h("span", { class: "spread-dot", style: `left:${at(reward)}`, title: `reward ${formatNumber(reward)}`, "data-reward": String(reward) }));
  const described = [
    rewards.length ? `rewards ${rewards.map(formatNumber).join(", ")}` : "no rewards",
    `on a scale from ${formatNumber(low)} to ${formatNumber(high)}`,
    mean === null ? null : `mean ${formatNumber(mean)}`,
  ].filter(Boolean);
  return h(
    "div",
    { class: "spread", role: "img", "aria-label": described.join(", ") },
    h("span", { class: "spread-end", title: "lowest reward in this batch" }, formatNumber(low)),
    track,
    h("span", { class: "spread-end", title: "highest reward in this batch" }, formatNumber(high)),
  );
}
