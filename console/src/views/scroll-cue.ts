// A sign that a wide table scrolls sideways: a fade on each edge that has more behind it, and a
// line saying how many columns are out of sight ("scroll for 6 more metrics →").
import { h } from "../dom.js";
import { plural } from "../format.js";
import "./views.css";

export class ScrollCue {
  /** The frame (fades drawn over the scroll box's edges), then the hint under it. */
  readonly element: HTMLElement;
  private readonly hint = h("p", { class: "scroll-hint muted", "aria-live": "polite", hidden: "" });
  private readonly observer = new ResizeObserver(() => this.update());

  /** `box` scrolls; `columns` are the selector of the cells counted as "more" (one per column, e.g. header cells). */
  constructor(
    readonly box: HTMLElement,
    private readonly columns: string,
    private readonly noun: string,
  ) {
    box.classList.add("table-scroll");
    box.addEventListener("scroll", () => this.update(), { passive: true });
    this.observer.observe(box);
    this.element = h("div", { class: "scroll-frame" }, box, this.hint);
  }

  /** Call after the box's content changed. */
  update(): void {
    const { box } = this;
    const hiddenRight = box.scrollWidth - box.clientWidth - box.scrollLeft > 1;
    const frame = this.element;
    frame.classList.toggle("more-right", hiddenRight);
    frame.classList.toggle("more-left", box.scrollLeft > 1);
    const edge = box.getBoundingClientRect().right;
    const out = [...box.querySelectorAll(this.columns)].filter((cell) => cell.getBoundingClientRect().right > edge + 1).length;
    this.hint.hidden = out === 0;
    this.hint.textContent = out === 0 ? "" : `Scroll sideways for ${plural(out, `more ${this.noun}`, `more ${this.noun}s`)} →`;
  }

  destroy(): void {
    this.observer.disconnect();
  }
}
