// What to do next after an API error, by its code: the banner says what happened (the server's
// message) and then what the person can do about it, with the button or link that does it.
import { Code, ConnectError } from "@connectrpc/connect";
import { apiKey } from "./api.js";
import { h } from "./dom.js";

/** Shows the current route again (the router listens for hash changes). */
function reroute(hash = location.hash || "#/"): void {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

/** The server's message already says what to do (retry when, or who must fix what): no generic hint. */
const SAYS_WHAT_TO_DO = /\b(retry|try again|refused until|restart)/i;

export function nextStep(cause: unknown): HTMLElement | null {
  if (cause === undefined || cause === null) return null;
  const error = ConnectError.from(cause);
  switch (error.code) {
    case Code.Unauthenticated:
      return h(
        "span",
        { class: "next-step", "data-next-step": "sign-in" },
        "The API key was not accepted (revoked, mistyped, or from another server): ",
        h("button", { type: "button", class: "secondary", onclick: () => (apiKey.clear(), reroute()) }, "Sign in again"),
      );
    case Code.PermissionDenied:
      return h("span", { class: "next-step", "data-next-step": "permission" }, "This key's entity may not do that: sign in with a key of the entity that owns it, or ask its operator. ", h("a", { href: "#/" }, "Back to the models"));
    case Code.NotFound:
      return h("span", { class: "next-step", "data-next-step": "back" }, "It may have been deleted, or belong to another entity. ", h("a", { href: "#/" }, "Back to the models"));
    case Code.Unavailable:
    case Code.ResourceExhausted:
      if (SAYS_WHAT_TO_DO.test(error.rawMessage)) return null;
      return h(
        "span",
        { class: "next-step", "data-next-step": "retry" },
        error.code === Code.Unavailable ? "The server or its database is down; retry in a moment. " : "The server is busy; retry in a moment. ",
        h("button", { type: "button", class: "secondary", onclick: () => reroute() }, "Retry"),
      );
    case Code.Unknown:
      // fetch itself failed (the server is not answering, or the network is down).
      if (!(error.cause instanceof TypeError)) return null;
      return h("span", { class: "next-step", "data-next-step": "retry" }, "The server cannot be reached: it or the network is down; retry in a moment. ", h("button", { type: "button", class: "secondary", onclick: () => reroute() }, "Retry"));
    default:
      return null;
  }
}
