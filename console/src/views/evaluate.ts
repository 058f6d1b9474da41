// Evaluation of a model: a small prompt set (pasted or uploaded, checked in the page) run on two
// checkpoints side by side, each output scored by one metric (exact match, a regex, a JSON
// schema); the result is kept with the model, listed below, reopened or deleted from there.
// Route: #/models/{id}/evaluate[?evaluation=ID] (the evaluation shown is kept in the URL).
import type { Evaluation } from "../../../gen/srl/v1/evaluations_pb.js";
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import { evaluations, models, readable } from "../api.js";
import { confirmAction } from "../confirm.js";
import { h, showError } from "../dom.js";
import { describeMetric, metricFields } from "../evaluate/metric-fields.js";
import { missingExpected, parsePromptSet } from "../evaluate/prompt-set.js";
import { evaluationResult, stepLabel } from "../evaluate/result-table.js";
import { savedList } from "../evaluate/saved-list.js";
import { plural } from "../format.js";
import type { ViewContext } from "../view.js";
import "../evaluate/evaluate.css";
import { crumbs, modelNotFound, modelTitle } from "./links.js";
import { findModel } from "./run-data.js";
import "./views.css";

const MAX_UPLOAD_BYTES = 5 * 1024 * 1024;
const EXAMPLE = '{"prompt": "What is 2 + 2? Answer with the number only.", "expected": "4"}\n{"prompt": "Capital of France? One word.", "expected": "Paris"}';

export async function evaluateView(modelId: string, context: ViewContext): Promise<HTMLElement> {
  let model: Model | null;
  let steps: number[];
  try {
    model = await findModel(modelId, context.signal);
    const page = model ? await models.listCheckpoints({ modelId, limit: 100, order: "desc" }, { signal: context.signal }) : null;
    steps = [...new Set([...(page?.data ?? []).map((checkpoint) => checkpoint.step), 0])].sort((a, b) => b - a);
  } catch (error) {
    if (!context.signal.aborted) showError(readable(error));
    return h("section", {}, h("h1", {}, "Evaluate"), h("p", { class: "muted" }, "The model could not be read. Check that the server is up, then reload the page."));
  }
  if (!model) {
    return modelNotFound(modelId);
  }
  const found = model;

  // Side by side, older on the left: by default the step before the newest (or the base) and the newest.
  const first = stepSelect("ev-step-a", steps, false);
  const second = stepSelect("ev-step-b", steps, true);
  first.value = String(steps[1] ?? 0);
  second.value = steps.length > 1 ? String(steps[0]) : "";

  const prompts = h("textarea", { id: "ev-prompts", name: "prompts", rows: "7", spellcheck: "false", placeholder: `One prompt a line, or JSONL:\n${EXAMPLE}`, "aria-describedby": "ev-prompts-help ev-prompts-check" });
  const upload = h("input", { id: "ev-upload", type: "file", accept: ".txt,.jsonl,.json,.ndjson,text/plain,application/json" });
  const promptCheck = h("div", { id: "ev-prompts-check", class: "ev-check-line", "aria-live": "polite" });
  const metric = metricFields(() => updatePromptCheck());
  const name = h("input", { id: "ev-name", name: "name", type: "text", maxlength: "200", placeholder: "default: the metric and the time", autocomplete: "off" });
  const system = h("textarea", { id: "ev-system", name: "system", rows: "2", placeholder: "Optional: a system message before each prompt" });
  const maxTokens = h("input", { id: "ev-max-tokens", name: "max_tokens", type: "number", min: "1", max: "1024", step: "1", value: "128", required: "", inputmode: "numeric" });
  const temperature = h("input", { id: "ev-temperature", name: "temperature", type: "number", min: "0", max: "2", step: "0.01", value: "0", required: "", inputmode: "decimal" });
  const run = h("button", { type: "submit", class: "ev-run" }, "Run evaluation");
  const runStatus = h("p", { class: "ev-run-status", role: "status" });
  const problems = h("ul", { class: "ev-problems", hidden: "", role: "alert", tabindex: "-1" });
  const resultBox = h("section", { class: "ev-result-box", hidden: "", "aria-label": "Evaluation result" });
  const savedBox = h("div", {}, h("p", { class: "muted" }, "Loading…"));

  function updatePromptCheck(): void {
    const set = parsePromptSet(prompts.value);
    if (prompts.value.trim() === "") {
      promptCheck.className = "ev-check-line muted";
      promptCheck.textContent = "No prompts yet.";
      return;
    }
    const missing = missingExpected(set.items);
    if (set.problems.length > 0) {
      promptCheck.className = "ev-check-line bad";
      promptCheck.textContent = `${plural(set.problems.length, "problem")}: ${set.problems[0]}${set.problems.length > 1 ? " …" : ""}`;
    } else if (metric.type() === "exact_match" && missing > 0) {
      promptCheck.className = "ev-check-line bad";
      promptCheck.textContent = `${plural(set.items.length, "prompt")}, ${missing} without "expected": exact match needs it on every prompt (JSONL lines {"prompt": …, "expected": …}).`;
    } else {
      promptCheck.className = "ev-check-line good";
      promptCheck.textContent = `✓ ${plural(set.items.length, "prompt")}, ${set.items.length - missing} with an expected answer.`;
    }
  }
  prompts.addEventListener("input", updatePromptCheck);
  upload.addEventListener("change", () => {
    const file = upload.files?.[0];
    if (!file) return;
    if (file.size > MAX_UPLOAD_BYTES) {
      showProblems([`${file.name} is ${(file.size / 1024 / 1024).toFixed(1)} MiB: a prompt set of at most 200 prompts fits in far less (5 MiB at most).`]);
      return;
    }
    void file.text().then((text) => {
      prompts.value = text;
      updatePromptCheck();
      showProblems([]);
    });
  });
  updatePromptCheck();

  function showProblems(list: string[]): void {
    problems.replaceChildren(...list.map((problem) => h("li", {}, problem)));
    problems.hidden = list.length === 0;
  }

  function showResult(evaluation: Evaluation, focus: boolean): void {
    resultBox.replaceChildren(evaluationResult(evaluation));
    resultBox.hidden = false;
    history.replaceState(history.state, "", `#/models/${encodeURIComponent(modelId)}/evaluate?evaluation=${encodeURIComponent(evaluation.id)}`);
    if (focus) {
      const heading = resultBox.querySelector("h2");
      heading?.focus();
      heading?.scrollIntoView({ block: "start" });
    }
  }
  function clearResult(): void {
    resultBox.hidden = true;
    resultBox.replaceChildren();
    history.replaceState(history.state, "", `#/models/${encodeURIComponent(modelId)}/evaluate`);
  }

  async function open(id: string, focus: boolean): Promise<void> {
    try {
      showResult(await evaluations.getEvaluation({ evaluationId: id }, { signal: context.signal }), focus);
    } catch (error) {
      if (!context.signal.aborted) showError(`The evaluation could not be opened: ${readable(error)}`);
    }
  }

  async function remove(evaluation: Evaluation): Promise<void> {
    const label = evaluation.name || evaluation.id.slice(0, 8);
    const deleted = await confirmAction({
      title: "Delete this evaluation?",
      message: [h("p", {}, "The evaluation ", h("strong", {}, label), ` (${describeMetric(evaluation.metric)}, ${evaluation.steps.map(stepLabel).join(" vs ")}) and all its outputs will be deleted. This cannot be undone.`)],
      confirmLabel: "Delete evaluation",
      action: async () => {
        await evaluations.deleteEvaluation({ evaluationId: evaluation.id });
      },
    });
    if (!deleted) return;
    if (resultBox.querySelector(`[data-evaluation-id="${evaluation.id}"]`)) clearResult();
    await loadSaved();
  }

  async function loadSaved(): Promise<void> {
    try {
      const page = await evaluations.listEvaluations({ modelId, limit: 100 }, { signal: context.signal });
      savedBox.replaceChildren(savedList(page.data, { open: (evaluation) => void open(evaluation.id, true), remove: (evaluation) => void remove(evaluation) }));
    } catch (error) {
      if (context.signal.aborted) return;
      savedBox.replaceChildren(h("p", { class: "muted" }, `The saved evaluations could not be read: ${readable(error)}. Reload the page to try again.`));
    }
  }

  const form = h(
    "form",
    { class: "ev-form", novalidate: "" },
    h(
      "fieldset",
      { class: "ev-steps" },
      h("legend", {}, "Checkpoints, side by side"),
      h("label", { for: "ev-step-a" }, "Checkpoint A"),
      first,
      h("label", { for: "ev-step-b" }, "Checkpoint B"),
      second,
    ),
    h(
      "fieldset",
      { class: "ev-prompts" },
      h("legend", {}, "Prompt set"),
      h("label", { for: "ev-prompts" }, "Prompts"),
      h("p", { id: "ev-prompts-help", class: "muted" }, "One prompt a line, or JSONL lines ", h("code", {}, '{"prompt": "…", "expected": "…"}'), ". At most 200."),
      prompts,
      promptCheck,
      h("label", { for: "ev-upload", class: "ev-upload-label" }, "Or upload a file (.txt or .jsonl): "),
      upload,
    ),
    metric.element,
    h(
      "fieldset",
      { class: "ev-options" },
      h("legend", {}, "Generation"),
      h("label", { class: "ev-field ev-wide" }, h("span", {}, "System prompt"), system),
      h("label", { class: "ev-field" }, h("span", {}, "Max tokens"), maxTokens),
      h("label", { class: "ev-field" }, h("span", {}, "Temperature"), temperature),
      h("label", { class: "ev-field ev-wide" }, h("span", {}, "Name (optional)"), name),
      h("small", { class: "muted ev-wide" }, "Temperature 0 is greedy: a rerun gives the same outputs."),
    ),
    problems,
    h("div", { class: "ev-actions" }, run, runStatus),
  );

  // What Run found wrong goes once the person changes anything (Run checks again).
  form.addEventListener("input", () => showProblems([]));
  form.addEventListener("change", () => showProblems([]));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (run.disabled) return;
    const set = parsePromptSet(prompts.value);
    const chosen = metric.read();
    const found: string[] = [...set.problems];
    if ("problem" in chosen) found.push(chosen.problem);
    else if (chosen.metric.type === "exact_match" && set.problems.length === 0 && missingExpected(set.items) > 0) found.push(`Exact match needs "expected" on every prompt; ${missingExpected(set.items)} of ${set.items.length} have none. Write them as JSONL lines {"prompt": …, "expected": …}, or pick a regex or a JSON schema.`);
    const picked = [Number(first.value), ...(second.value === "" ? [] : [Number(second.value)])];
    if (picked.length === 2 && picked[0] === picked[1]) found.push(`Checkpoint A and B are both ${stepLabel(picked[0] ?? 0)}: pick two different steps, or "none" for B.`);
    const tokens = Number(maxTokens.value);
    if (!Number.isInteger(tokens) || tokens < 1 || tokens > 1024) found.push("Max tokens must be a whole number from 1 to 1024.");
    const heat = Number(temperature.value);
    if (temperature.value === "" || !Number.isFinite(heat) || heat < 0 || heat > 2) found.push("Temperature must be a number from 0 to 2.");
    showProblems(found);
    if (found.length > 0 || "problem" in chosen) {
      problems.focus();
      return;
    }
    run.disabled = true;
    run.textContent = "Running…";
    runStatus.textContent = `Running ${plural(set.items.length, "prompt")} on ${plural(picked.length, "checkpoint")}…`;
    form.setAttribute("aria-busy", "true");
    void evaluations
      .createEvaluation(
        { modelId, steps: picked, items: set.items, metric: chosen.metric, name: name.value.trim() || undefined, system: system.value.trim() === "" ? undefined : system.value, maxTokens: tokens, temperature: heat },
        { signal: context.signal },
      )
      .then(
        (evaluation) => {
          runStatus.textContent = `Done: ${evaluation.scores.map((score) => `${stepLabel(score.step)} ${score.passed}/${score.total}`).join(", ")}.`;
          showError(null);
          showResult(evaluation, true);
          void loadSaved();
        },
        (error: unknown) => {
          if (context.signal.aborted) return;
          runStatus.textContent = "";
          showError(`The evaluation did not run: ${readable(error)}`);
        },
      )
      .finally(() => {
        run.disabled = false;
        run.textContent = "Run evaluation";
        form.removeAttribute("aria-busy");
      });
  });

  const page = h(
    "div",
    { class: "run-view ev-page" },
    h(
      "section",
      { class: "page-header" },
      crumbs(h("a", { href: `#/models/${modelId}` }, modelTitle(found)), "Evaluate"),
      h("h1", {}, `Evaluate ${modelTitle(found)}`),
      h("p", { class: "muted" }, "Run a small prompt set on two checkpoints side by side; each output is scored by the metric you pick, and the result is saved with the model."),
      steps.length === 1 ? h("p", { class: "ev-note" }, "This model has only its base (step 0) so far: the evaluation runs on one checkpoint. Train it to compare steps.") : null,
      form,
    ),
    resultBox,
    h("section", {}, h("h2", {}, "Saved evaluations"), savedBox),
  );
  await loadSaved();
  const linked = context.query.get("evaluation");
  if (linked) await open(linked, false);
  return page;
}

function stepSelect(id: string, steps: readonly number[], withNone: boolean): HTMLSelectElement {
  return h("select", { id, name: id }, ...(withNone ? [h("option", { value: "" }, "none (one checkpoint)")] : []), ...steps.map((step) => h("option", { value: String(step) }, stepLabel(step))));
}
