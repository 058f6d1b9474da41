// Panels grouped by their metric's prefix (`val/...`, `train/...`), each group under a heading, so
// a page of a dozen panels reads as a few families. A single family gets no heading (a job page's
// `loss`, `grad_norm`, ... need none).
import { h } from "../dom.js";

/** The family of a metric: the part before its first "/", or "" when it has none. */
export function metricGroup(name: string): string {
  const slash = name.indexOf("/");
  return slash > 0 ? name.slice(0, slash) : "";
}

const TITLES: Record<string, string> = { val: "Validation", train: "Training", "": "Other" };

function groupTitle(group: string): string {
  return TITLES[group] ?? group;
}

export class PanelGroups {
  readonly element: HTMLElement;
  private readonly groups = new Map<string, { section: HTMLElement; heading: HTMLElement; grid: HTMLElement }>();

  constructor(className = "panel-groups") {
    this.element = h("div", { class: className });
  }

  /** Puts these panels (in this order) under their groups' headings; empty groups go away. */
  place(panels: readonly { metric: string; element: HTMLElement }[]): void {
    const order: string[] = [];
    const byGroup = new Map<string, HTMLElement[]>();
    for (const panel of panels) {
      const group = metricGroup(panel.metric);
      if (!byGroup.has(group)) {
        byGroup.set(group, []);
        order.push(group);
      }
      byGroup.get(group)?.push(panel.element);
    }
    for (const [group, parts] of this.groups) {
      if (byGroup.has(group)) continue;
      parts.section.remove();
      this.groups.delete(group);
    }
    order.forEach((group, index) => {
      const parts = this.group(group);
      if (this.element.children[index] !== parts.section) this.element.insertBefore(parts.section, this.element.children[index] ?? null);
      const elements = byGroup.get(group) ?? [];
      // In order, moving a node only when it is out of place (moving redraws nothing, but costs layout).
      elements.forEach((element, at) => {
        if (parts.grid.children[at] !== element) parts.grid.insertBefore(element, parts.grid.children[at] ?? null);
      });
      parts.heading.textContent = `${groupTitle(group)} (${elements.length})`;
      parts.heading.hidden = order.length < 2;
    });
  }

  private group(group: string): { section: HTMLElement; heading: HTMLElement; grid: HTMLElement } {
    let parts = this.groups.get(group);
    if (!parts) {
      const heading = h("h3", { class: "panel-group-title" });
      const grid = h("div", { class: "chart-grid" });
      parts = { section: h("div", { class: "panel-group", "data-group": group || "other" }, heading, grid), heading, grid };
      this.groups.set(group, parts);
    }
    return parts;
  }
}
