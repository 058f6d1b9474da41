// A group's reward spread on one line: a dot per trajectory on the batch's reward scale (its ends
// labelled), the group's mean as a tick, so groups with no spread (no learning signal for RL)
// stand out. Positioned HTML rather than SVG: dots stay round at any width.
import { h } from "../dom.js";
import { formatNumber } from "../format.js";

export function spreadStrip(rewards: number[], [low, high]: [number, number], mean: number | null): HTMLElement {
  const at = (value: number) => `${((value - low) / (high - low || 1)) * 100}%`;
  const track = h("div", { class: "spread-track" });
  if (mean !== null) track.append(h("span", { class: "spread-mean", style: `left:${at(mean)}`, title: `mean ${formatNumber(mean)}` }));
  for (const reward of rewards) track.append(h("span", { class: "spread-dot", style: `left:${at(reward)}`, title: `reward ${formatNumber(reward)}`, "data-reward": String(reward) }));
  return h(
    "div",
    { class: "spread", role: "img", "aria-label": `rewards ${rewards.map(formatNumber).join(", ")} on a scale from ${formatNumber(low)} to ${formatNumber(high)}` },
    h("span", { class: "spread-end" }, formatNumber(low)),
    track,
    h("span", { class: "spread-end" }, formatNumber(high)),
  );
}
