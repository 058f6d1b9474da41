// The console: hash routes over the views; signs in first when no API key is kept in this tab.
// A route is `#/path?query`; leaving a view aborts its signal (streams and timers stop).
import { apiKey, models, readable } from "./api.js";
import { h, show, showError } from "./dom.js";
import type { ViewContext } from "./view.js";
import { compareView } from "./views/compare.js";
import { evaluateView } from "./views/evaluate.js";
import { jobView } from "./views/job.js";
import { keysView } from "./views/keys.js";
import { modelView } from "./views/model.js";
import { modelsView } from "./views/models.js";
import { operatorView } from "./views/operator.js";
import { playgroundView } from "./views/playground.js";
import { signInView } from "./views/sign-in.js";
import { trainView } from "./views/train.js";
import { trajectoriesView } from "./views/trajectories.js";

type Render = (context: ViewContext, ...params: string[]) => Promise<HTMLElement> | HTMLElement;

const ROUTES: [RegExp, Render][] = [
  [/^\/$/, (context) => modelsView(context)],
  [/^\/models\/([^/]+)$/, (context, id) => modelView(id as string, context)],
  [/^\/models\/([^/]+)\/trajectories$/, (context, id) => trajectoriesView(id as string, context)],
  [/^\/models\/([^/]+)\/train$/, (context, id) => trainView(id as string, context)],
  [/^\/models\/([^/]+)\/evaluate$/, (context, id) => evaluateView(id as string, context)],
  [/^\/jobs\/([^/]+)$/, (context, id) => jobView(id as string, context)],
  [/^\/compare$/, (context) => compareView(context)],
  [/^\/playground$/, (context) => playgroundView(context)],
  [/^\/keys$/, (context) => keysView(context)],
  [/^\/operator$/, (context) => operatorView(context)],
];

let leave = new AbortController();

async function route(): Promise<void> {
  leave.abort();
  const current = new AbortController();
  leave = current;
  showError(null);
  const who = document.getElementById("who") as HTMLElement;
  if (!apiKey.get()) {
    who.replaceChildren(h("span", { class: "who-name signed-out" }, "not signed in"));
    show(signInView(() => void route()));
    return;
  }
  void models.getCurrentEntity({}).then(
    (entity) => who.replaceChildren(h("span", { class: "who-name", title: entity.entity }, `signed in as ${entity.entity}`), h("button", { class: "secondary", onclick: () => (apiKey.clear(), void route()) }, "Sign out")),
    (error: unknown) => {
      if (!current.signal.aborted) showError(readable(error), error);
    },
  );
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path = "/", search = ""] = hash.split("?", 2);
  const context: ViewContext = { query: new URLSearchParams(search), signal: current.signal };
  for (const [pattern, render] of ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    const view = await render(context, ...match.slice(1).map((part) => decodeURIComponent(part)));
    if (!current.signal.aborted) show(view);
    return;
  }
  show(h("section", {}, h("h1", {}, "Not found"), h("p", {}, "Nothing lives at ", h("code", {}, path), ". ", h("a", { href: "#/" }, "Back to the models."))));
}

window.addEventListener("hashchange", () => void route());
void route();
