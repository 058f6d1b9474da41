// How the console writes values for people: dates relative with the absolute time on hover, short
// ids with a copy button, numbers without noise, and empty states that say what to do next.
import { h } from "./dom.js";

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 86_400_000],
  ["month", 30 * 86_400_000],
  ["week", 7 * 86_400_000],
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
  ["second", 1000],
];
const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
const absolute = new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "medium" });

/** "3 minutes ago". */
export function relativeTime(date: Date, now = Date.now()): string {
  const elapsed = date.getTime() - now;
  for (const [unit, size] of UNITS) {
    if (Math.abs(elapsed) >= size || unit === "second") return relative.format(Math.round(elapsed / size), unit);
  }
  return "";
}

/** A time element showing the relative time, the absolute one as its title (and in `datetime`). */
export function timeCell(iso: string | undefined | null): HTMLElement | string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return h("time", { datetime: date.toISOString(), title: absolute.format(date) }, relativeTime(date));
}

/** Both forms, for a page header: "3 minutes ago (25 Nov 2026, 01:20:03)". */
export function timeLong(iso: string | undefined | null): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${relativeTime(date)} (${absolute.format(date)})`;
}

/** A duration in words: "42 s", "3 min 5 s", "2 h 10 min". */
export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "—";
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${ms < 10_000 ? (ms / 1000).toFixed(1) : seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** An id cut to its first 8 characters, the whole id on hover, and a button that copies it. */
export function shortId(id: string): HTMLElement {
  const copy = h("button", { type: "button", class: "copy", title: "Copy the full id", "aria-label": `Copy ${id}` }, "copy");
  copy.addEventListener("click", (event) => {
    event.preventDefault();
    event.stopPropagation();
    void navigator.clipboard?.writeText(id).then(
      () => flash(copy, "copied"),
      () => flash(copy, "select it"),
    );
  });
  return h("span", { class: "short-id", "data-id": id }, h("code", { title: id }, id.slice(0, 8)), copy);
}

function flash(button: HTMLElement, text: string): void {
  button.textContent = text;
  setTimeout(() => (button.textContent = "copy"), 1200);
}

/** Integers as integers (with separators), other numbers to 4 significant digits. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return value.toLocaleString("en");
  const magnitude = Math.abs(value);
  // 1e-4, not 1.000e-4: the exponent form without trailing zeros.
  if (magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e6)) return Number(value.toPrecision(4)).toExponential();
  return String(Number(value.toPrecision(4)));
}

/** The name a checkpoint's metric has on the run's charts (the trainer logs it under `train/`). */
export function chartName(metric: string): string {
  return metric.includes("/") ? metric : `train/${metric}`;
}

/** A panel saying there is nothing here yet, and the command that changes that. */
export function emptyState(text: string, snippet?: string): HTMLElement {
  return h("div", { class: "empty", "data-empty": "" }, h("p", {}, text), snippet ? h("pre", { class: "snippet" }, snippet) : null);
}

/** The base URL the API is reached at, for snippets. */
export function apiBase(): string {
  return `${location.origin}/v1`;
}

/** "1 group", "3 groups". */
export function plural(count: number, word: string, many = `${word}s`): string {
  return `${count.toLocaleString("en")} ${count === 1 ? word : many}`;
}
