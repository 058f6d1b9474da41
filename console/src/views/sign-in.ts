import { Code, ConnectError } from "@connectrpc/connect";
import { apiKey, models, readable } from "../api.js";
import { h, showError } from "../dom.js";

/**
 * Pasting an API key; it is checked against the API before it is kept for this tab. A refusal stays
 * up only until the key is edited (an old "invalid key" beside a new key misleads).
 */
export function signInView(onSignedIn: () => void): HTMLElement {
  const input = h("input", { type: "password", name: "key", placeholder: "srl_…", autocomplete: "off", "aria-label": "API key", size: "50" });
  input.addEventListener("input", () => showError(null));
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
            // A refused key: check it (the banner's "sign in again" would lead back here). Anything
            // else (the server down) gets the banner's next step.
            const refused = ConnectError.from(error).code === Code.Unauthenticated;
            showError(`Sign-in failed: ${readable(error)}${refused ? ". Check the key, or create one with npm run keys -- create --entity NAME." : ""}`, refused ? undefined : error);
          },
        );
      },
    },
    input,
    h("button", { type: "submit" }, "Sign in"),
  );
  return h("section", {}, h("h1", {}, "Sign in"), h("p", { class: "muted" }, "Paste an API key (npm run keys -- create --entity NAME). It stays in this tab only."), form);
}
