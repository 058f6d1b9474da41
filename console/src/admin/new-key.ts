// A key just created: its text once, a copy button, the warning that it is not shown again, and how
// to use it (the variable the README's snippets read).
import type { CreatedApiKey } from "../../../gen/srl/v1/keys_pb.js";
import { h } from "../dom.js";
import { apiBase } from "../format.js";

export function newKeyPanel(created: CreatedApiKey, done: () => void): HTMLElement {
  const text = h("input", { id: "new-key", type: "text", readonly: "", value: created.key, spellcheck: "false", autocomplete: "off", "aria-describedby": "new-key-warning" });
  const copy = h("button", { type: "button", class: "secondary" }, "Copy key");
  copy.addEventListener("click", () => {
    text.select();
    void navigator.clipboard?.writeText(created.key).then(
      () => (copy.textContent = "Copied"),
      () => (copy.textContent = "Press Ctrl+C to copy"),
    );
  });
  const label = created.apiKey?.label ? ` (${created.apiKey.label})` : "";
  return h(
    "div",
    { class: "key-created", tabindex: "-1", role: "region", "aria-label": "New API key" },
    h("h3", {}, `New key ${created.apiKey?.prefix ?? ""}${label}`),
    h("p", { id: "new-key-warning", class: "key-warning" }, h("strong", {}, "Copy it now: "), "this is the only time the key is shown. Only its prefix is kept in the list."),
    h("div", { class: "key-row" }, h("label", { for: "new-key", class: "visually-hidden" }, "New API key"), text, copy),
    h("p", {}, "Use it from a shell, then in any client:"),
    h("pre", { class: "snippet" }, `export SRL_API_KEY=${created.key}\ncurl -s ${apiBase()}/preview/whoami -H "Authorization: Bearer $SRL_API_KEY"`),
    h("button", { type: "button", class: "secondary", onclick: done }, "Done, I saved it"),
  );
}
