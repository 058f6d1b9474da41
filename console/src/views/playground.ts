// The playground: one prompt to a base model or any checkpoint, or to two side by side, streamed,
// with sampling controls, a Stop button, and each reply's finish reason, usage and speed.
// Route: #/playground?model=NAME[&compare=NAME] (kept up to date as the person chooses).
import { h, showError } from "../dom.js";
import { apiBase, emptyState } from "../format.js";
import { catalogGroups, defaultComparison, loadCatalog, type ModelCatalog } from "../playground/model-catalog.js";
import { modelPicker } from "../playground/model-picker.js";
import { replyColumn } from "../playground/reply-column.js";
import { chatRequest } from "../playground/reply-stream.js";
import { samplingFields } from "../playground/sampling-fields.js";
import type { ViewContext } from "../view.js";
import "../playground.css";
import { modelTitle } from "./links.js";

const DEFAULT_PROMPT = "Hello! Who are you?";

export function playgroundView(context: ViewContext): HTMLElement {
  const linkedCompare = context.query.get("compare");
  const first = modelPicker({ name: "model", label: "Model", initial: context.query.get("model"), loading: true });
  const second = modelPicker({ name: "compare-model", label: "Second model", initial: linkedCompare, loading: true });
  first.element.classList.add("pg-model-a");
  second.element.classList.add("pg-model-b");
  let catalog: ModelCatalog = { baseModels: [], registered: [], problems: [] };
  // The second picker follows the first (step 0 of the same model) until the person picks it.
  let secondPicked = linkedCompare !== null;

  const compare = h("input", { type: "checkbox", name: "compare" });
  compare.checked = linkedCompare !== null;
  const compareToggle = h("label", { class: "pg-compare-toggle" }, compare, "Compare with…");
  const note = h("div", { class: "pg-note" });

  const system = h("textarea", { name: "system", rows: "2", placeholder: "Optional: how the assistant should behave" });
  const user = h("textarea", { name: "prompt", rows: "4", required: "" });
  user.value = DEFAULT_PROMPT;
  const sampling = samplingFields();
  const send = h("button", { type: "submit", class: "pg-send" }, "Send");
  const stop = h("button", { type: "button", class: "secondary pg-stop", disabled: "" }, "Stop");
  const shortcut = /Mac|iPhone|iPad/.test(navigator.userAgent) ? "⌘ Enter" : "Ctrl+Enter";

  const columns = [replyColumn("a"), replyColumn("b")] as const;
  const columnsBox = h("div", { class: "pg-columns" }, columns[0].element, columns[1].element);

  const models = h("div", { class: "pg-models" }, first.element, compareToggle, second.element);
  const showCompare = () => {
    models.classList.toggle("pg-two", compare.checked);
    second.element.hidden = !compare.checked;
    second.setEnabled(compare.checked);
    columns[1].element.hidden = !compare.checked;
    columnsBox.classList.toggle("pg-two", compare.checked);
  };
  const followFirst = () => {
    if (!secondPicked && first.value()) second.choose(defaultComparison(first.value(), catalog));
  };
  const keepInUrl = () => {
    if (context.signal.aborted) return;
    const query = new URLSearchParams();
    if (first.value()) query.set("model", first.value());
    if (compare.checked && second.value()) query.set("compare", second.value());
    // replaceState: no hashchange, so the view is not drawn again.
    history.replaceState(history.state, "", `#/playground${query.size > 0 ? `?${query}` : ""}`);
  };
  first.onChange(() => (followFirst(), keepInUrl()));
  second.onChange(() => ((secondPicked = true), keepInUrl()));
  compare.addEventListener("change", () => (followFirst(), showCompare(), keepInUrl()));
  showCompare();

  let running: AbortController | null = null;
  const setRunning = (controller: AbortController | null) => {
    running = controller;
    send.disabled = controller !== null;
    stop.disabled = controller === null;
  };
  const start = async () => {
    const targets = [{ column: columns[0], picker: first }, ...(compare.checked ? [{ column: columns[1], picker: second }] : [])];
    if (running || targets.some(({ picker }) => !picker.value())) return;
    const controller = new AbortController();
    setRunning(controller);
    const prompts = { system: system.value, user: user.value };
    const settings = sampling.read();
    await Promise.all(targets.map(({ column, picker }) => column.run(chatRequest(picker.value(), prompts, settings), picker.label(), controller.signal)));
    if (running === controller) setRunning(null);
  };
  stop.addEventListener("click", () => running?.abort());
  context.signal.addEventListener("abort", () => running?.abort());

  const form = h(
    "form",
    { class: "pg-form", onsubmit: (event) => (event.preventDefault(), void start()) },
    models,
    note,
    h(
      "div",
      { class: "pg-body" },
      h("div", { class: "pg-prompts" }, h("label", { class: "pg-field" }, h("span", {}, "System prompt"), system), h("label", { class: "pg-field" }, h("span", {}, "User prompt"), user)),
      sampling.element,
    ),
    h("div", { class: "pg-actions" }, send, stop, h("small", { class: "muted" }, `${shortcut} sends`)),
  );
  form.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  void loadCatalog(context.signal).then((loaded) => {
    if (context.signal.aborted) return;
    catalog = loaded;
    const groups = catalogGroups(catalog);
    first.setGroups(groups);
    second.setGroups(groups);
    followFirst();
    note.replaceChildren(...catalogNotes(catalog));
    if (catalog.problems.length > 0) showError(catalog.problems.join(" "));
  });

  return h(
    "section",
    { class: "pg" },
    h("div", { class: "pg-heading" }, h("h1", {}, "Playground"), h("p", { class: "muted" }, "Chat with a base model or any checkpoint of your models, or two at once.")),
    form,
    columnsBox,
  );
}

/** What the person should know about the lists: how to get a model of their own, steps left out. */
function catalogNotes(catalog: ModelCatalog): HTMLElement[] {
  const notes: HTMLElement[] = [];
  if (catalog.registered.length === 0) {
    const base = catalog.baseModels[0] ?? "tiny-chat";
    const snippet = `curl ${apiBase()}/preview/models \\\n  -H "Authorization: Bearer $SRL_API_KEY" -H "Content-Type: application/json" \\\n  -d '{"project": "demo", "name": "my-model", "base_model": "${base}"}'`;
    notes.push(emptyState("You have no models of your own yet, so only base models are listed. Register one on a base model, train it, and each checkpoint appears here:", snippet));
  }
  for (const { model, moreSteps } of catalog.registered) {
    if (moreSteps) notes.push(h("p", { class: "muted" }, `Only the newest 100 checkpoints of ${modelTitle(model)} are listed; choose "Custom model name…" for an older step.`));
  }
  return notes;
}
