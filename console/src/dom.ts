// A tiny element builder: text is always set as text (never parsed as HTML).
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

export function showError(message: string | null): void {
  const box = document.getElementById("error") as HTMLElement;
  box.hidden = message === null;
  box.textContent = message ?? "";
}

export function statusBadge(status: string): HTMLElement {
  return h("span", { class: `status ${status}`, "data-status": status }, status);
}
