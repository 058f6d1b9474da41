import { apiKey, models, readable } from "../api.js";
import { h, showError } from "../dom.js";

/** Pasting an API key; it is checked against the API before it is kept for this tab. */
export function signInView(onSignedIn: () => void): HTMLElement {
  const input = h("input", { type: "password", name: "key", placeholder: "srl_…", autocomplete: "off", "aria-label": "API key", size: "50" });
  const form = h(
    "form",
    {
      onsubmit: (event) => {
        event.preventDefault();
        apiKey.set(input.value.trim());
        models.getCurrentEntity({}).then(
          () => {
            showError(null);
            onSignedIn();
          },
          (error: unknown) => {
            apiKey.clear();
            showError(`Sign-in failed: ${readable(error)}`);
          },
        );
      },
    },
    input,
    h("button", { type: "submit" }, "Sign in"),
  );
  return h("section", {}, h("h1", {}, "Sign in"), h("p", { class: "muted" }, "Paste an API key (npm run keys -- create --entity NAME). It stays in this tab only."), form);
}
