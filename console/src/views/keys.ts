// The entity's API keys: listed by prefix (never their text), created with an optional label (the
// new key shown once, with a copy button and how to use it) and revoked after a confirmation; the
// key this console signed in with is marked, and revoking it signs the console out.
import type { ApiKey, CreatedApiKey } from "../../../gen/srl/v1/keys_pb.js";
import { newKeyPanel } from "../admin/new-key.js";
import { apiKey, apiKeys, models, readable } from "../api.js";
import { confirmAction } from "../confirm.js";
import { h, showError } from "../dom.js";
import { emptyState, timeCell } from "../format.js";
import type { ViewContext } from "../view.js";
import "../admin/admin.css";
import "../admin/stacked-table.css";
import "./views.css";

export async function keysView(context: ViewContext): Promise<HTMLElement> {
  const listBox = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const createdBox = h("div", { class: "key-created-box" });
  const label = h("input", { id: "key-label", name: "label", type: "text", maxlength: "100", autocomplete: "off", placeholder: "e.g. laptop, CI, eval script" });
  const create = h("button", { type: "submit" }, "Create key");
  const entityLine = h("p", { class: "muted" }, "Keys of your entity: each one can call the whole API as it. A key's text is shown once, when it is created.");

  async function load(): Promise<void> {
    try {
      const page = await apiKeys.listApiKeys({}, { signal: context.signal });
      listBox.replaceChildren(keyTable(page.data, (key) => void revoke(key)));
    } catch (error) {
      if (context.signal.aborted) return;
      listBox.replaceChildren(h("p", { class: "muted" }, "The keys could not be read."));
      showError(`The keys could not be read: ${readable(error)}`);
    }
  }

  async function revoke(key: ApiKey): Promise<void> {
    const revoked = await confirmAction({
      title: `Revoke key ${key.prefix}?`,
      message: [
        h("p", {}, "The key ", h("code", {}, key.prefix), key.label ? ` (${key.label})` : "", " stops working at once, for every client that uses it. This cannot be undone."),
        key.current ? h("p", { class: "key-current-warning" }, h("strong", {}, "It is the key this console is signed in with: the console will sign out.")) : "",
      ],
      confirmLabel: "Revoke key",
      action: async () => {
        await apiKeys.revokeApiKey({ prefix: key.prefix });
      },
    });
    if (!revoked) return;
    showError(null);
    if (key.current) {
      apiKey.clear();
      location.hash = "#/";
      // Already at #/: no hashchange would come, so draw the route (now the sign-in) again.
      window.dispatchEvent(new HashChangeEvent("hashchange"));
      return;
    }
    await load();
  }

  const form = h(
    "form",
    { class: "key-form" },
    h("label", { for: "key-label" }, "Label (optional)"),
    label,
    create,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (create.disabled) return;
    create.disabled = true;
    void apiKeys
      .createApiKey({ label: label.value.trim() || undefined })
      .then(
        (created: CreatedApiKey) => {
          showError(null);
          label.value = "";
          const panel = newKeyPanel(created, () => {
            createdBox.replaceChildren();
            label.focus();
          });
          createdBox.replaceChildren(panel);
          panel.focus();
          void load();
        },
        (error: unknown) => showError(`The key could not be created: ${readable(error)}`),
      )
      .finally(() => (create.disabled = false));
  });

  void models.getCurrentEntity({}, { signal: context.signal }).then(
    (entity) => entityLine.replaceChildren(`Keys of the entity `, h("strong", {}, entity.entity), ": each one can call the whole API as it. A key's text is shown once, when it is created."),
    () => {},
  );
  await load();
  return h(
    "div",
    { class: "run-view keys-page" },
    h("section", {}, h("h1", {}, "API keys"), entityLine, h("h2", {}, "New key"), form, createdBox),
    h("section", {}, h("h2", {}, "Keys"), listBox),
  );
}

function keyTable(keys: readonly ApiKey[], revoke: (key: ApiKey) => void): HTMLElement {
  if (keys.length === 0) return emptyState("No keys listed.");
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      { class: "keys-table stacked-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Prefix"), h("th", {}, "Label"), h("th", {}, "Created"), h("th", {}, "State"), h("th", {}, h("span", { class: "visually-hidden" }, "Actions")))),
      h(
        "tbody",
        {},
        ...keys.map((key) =>
          h(
            "tr",
            { "data-prefix": key.prefix, "data-state": key.revokedAt ? "revoked" : "active" },
            h("td", { "data-label": "Prefix" }, h("span", {}, h("code", {}, key.prefix), key.current ? h("span", { class: "key-this", title: "The key this console is signed in with" }, "this key") : "")),
            h("td", { "data-label": "Label" }, key.label || h("span", { class: "muted" }, "—")),
            h("td", { "data-label": "Created" }, timeCell(key.createdAt)),
            h("td", { "data-label": "State" }, key.revokedAt ? h("span", { class: "status failed" }, "revoked ", timeCell(key.revokedAt)) : h("span", { class: "status succeeded" }, "active")),
            h("td", { "data-label": "" }, key.revokedAt ? "" : h("button", { type: "button", class: "secondary", "aria-label": `Revoke ${key.prefix}`, onclick: () => revoke(key) }, "Revoke")),
          ),
        ),
      ),
    ),
  );
}
