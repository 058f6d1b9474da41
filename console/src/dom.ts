// A tiny element builder: text is always set as text (never parsed as HTML).
import { nextStep } from "./next-step.js";

type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, string | ((event: Event) => void)> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else element.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

export function show(view: Node): void {
  const app = document.getElementById("app") as HTMLElement;
  app.replaceChildren(view);
}

/**
 * The page's error banner: `message` (null hides it), then, when `cause` (the error the API gave)
 * has a common code, what to do next: sign in again, go back, retry in a moment.
 */
export function showError(message: string | null, cause?: unknown): void {
  const box = document.getElementById("error") as HTMLElement;
  box.hidden = message === null;
  if (message === null) {
    box.replaceChildren();
    return;
  }
  box.replaceChildren(h("span", { class: "error-message" }, message));
  const next = nextStep(cause);
  if (next) box.append(" ", next);
}

export function statusBadge(status: string): HTMLElement {
  return h("span", { class: `status ${status}`, "data-status": status }, status);
}
