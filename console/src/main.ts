// The console: hash routes over the views; signs in first when no API key is kept in this tab.
import { apiKey, models } from "./api.js";
import { h, show, showError } from "./dom.js";
import { jobView } from "./views/job.js";
import { modelView } from "./views/model.js";
import { modelsView } from "./views/models.js";
import { playgroundView } from "./views/playground.js";
import { signInView } from "./views/sign-in.js";

let generation = 0;

async function route(): Promise<void> {
  const current = ++generation;
  const isCurrent = () => current === generation;
  showError(null);
  const who = document.getElementById("who") as HTMLElement;
  if (!apiKey.get()) {
    who.replaceChildren();
    show(signInView(() => void route()));
    return;
  }
  void models.getCurrentEntity({}).then((entity) =>
    who.replaceChildren(`signed in as ${entity.entity} `, h("button", { class: "secondary", onclick: () => (apiKey.clear(), void route()) }, "Sign out")),
  );
  const path = location.hash.replace(/^#/, "") || "/";
  const model = /^\/models\/([^/]+)$/.exec(path);
  const job = /^\/jobs\/([^/]+)$/.exec(path);
  const view = model?.[1] ? await modelView(model[1], isCurrent) : job?.[1] ? jobView(job[1]) : path === "/playground" ? playgroundView() : await modelsView();
  if (isCurrent()) show(view);
}

window.addEventListener("hashchange", () => void route());
void route();
