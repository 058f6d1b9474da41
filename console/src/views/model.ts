// A model: what it is and where it stands (latest step, current job), its run curves, its
// checkpoints (metrics in columns; try, download, delete each), code that uses it, and its jobs
// (cancel an unfinished one); the model itself can be deleted. Refreshed while shown; the charts get new data in place, so zoom, smoothing and log scales stay.
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { models, readable, training } from "../api.js";
import { RunCharts, type RunSeries } from "../chart.js";
import { confirmAction } from "../confirm.js";
import { h, showError, statusBadge } from "../dom.js";
import { apiBase, emptyState, formatNumber, shortId, timeCell, timeLong } from "../format.js";
import { keepLoaded, type ViewContext } from "../view.js";
import { checkpointTable } from "./checkpoints-table.js";
import { cancellable, cancelJobButton } from "./job-actions.js";
import { jobDuration } from "./job-time.js";
import { crumbs, linkedShortId, modelNotFound, modelTitle, playgroundHref } from "./links.js";
import { ScrollCue } from "./scroll-cue.js";
import { findModel, RunHistory } from "./run-data.js";
import { Snippets } from "../snippets.js";
import "./views.css";

const REFRESH_MS = 2500;
const CHECKPOINTS_SHOWN = 100;
const JOBS_SHOWN = 20;

export async function modelView(modelId: string, context: ViewContext): Promise<HTMLElement> {
  let model: Model | null;
  try {
    model = await findModel(modelId, context.signal);
  } catch (error) {
    if (!context.signal.aborted) showError(readable(error));
    return h("section", {}, h("h1", {}, "Model"), h("p", { class: "muted" }, "The model could not be read."));
  }
  if (!model) {
    return modelNotFound(modelId);
  }
  const found = model;
  const facts = h("dl", { class: "facts" });
  const charts = new RunCharts(
    emptyState(
      "No metrics yet. Log scored trajectories to draw reward curves (each training job adds its train/* curves):",
      `curl -s ${apiBase()}/preview/models/${modelId}/log \\\n  -H "Authorization: Bearer $SRL_API_KEY" -H "Content-Type: application/json" \\\n  -d '{"split": "val", "trajectory_groups": [{"trajectories": [{"reward": 0.5}, {"reward": 0.9}]}]}'`,
    ),
  );
  context.signal.addEventListener("abort", () => charts.destroy());
  const checkpointsCue = new ScrollCue(h("div", { class: "checkpoints-scroll" }), "th[data-metric]", "metric");
  context.signal.addEventListener("abort", () => checkpointsCue.destroy());
  const checkpointsNote = h("p", { class: "muted" });
  const jobsBox = h("div", {});
  const snippets = new Snippets();
  const remove = h("button", { type: "button", class: "secondary danger-outline", "data-action": "delete-model" }, "Delete model");
  remove.addEventListener("click", () => void deleteModel(found, remove));
  const page = h(
    "div",
    { class: "model-page run-view" },
    h(
      "section",
      { class: "page-header" },
      crumbs(modelTitle(found)),
      h("div", { class: "title-row" }, h("h1", {}, modelTitle(found)), remove),
      facts,
      h("p", { class: "page-links" }, h("a", { href: `#/models/${modelId}/train` }, "Train"), h("a", { href: `#/models/${modelId}/evaluate` }, "Evaluate"), h("a", { href: `#/models/${modelId}/trajectories` }, "Trajectories"), h("a", { href: `#/compare?models=${encodeURIComponent(modelId)}` }, "Compare with other runs")),
    ),
    h("section", { class: "charts-section" }, h("h2", {}, "Run curves"), charts.element),
    h("section", { class: "checkpoints-section" }, h("h2", {}, "Checkpoints"), checkpointsCue.element, checkpointsNote),
    h("section", { class: "use-section" }, h("h2", {}, "Use this model"), h("p", { class: "muted", "data-use-step": "" }), snippets.element),
    h("section", {}, h("h2", {}, "Training jobs"), jobsBox),
  );

  const history = new RunHistory(found.runId);
  const shown = { checkpoints: "", jobs: "", facts: "" };
  const useStep = page.querySelector("[data-use-step]") as HTMLElement;
  const load = async () => {
    const [, checkpoints, jobs] = await Promise.all([
      history.load(context.signal),
      models.listCheckpoints({ modelId, limit: CHECKPOINTS_SHOWN, order: "desc" }, { signal: context.signal }),
      training.listTrainingJobs({ modelId, limit: JOBS_SHOWN }, { signal: context.signal }),
    ]);
    if (context.signal.aborted) return;
    const series = new Map<string, RunSeries[]>();
    for (const [name, points] of history.series()) series.set(name, [{ label: found.name, points }]);
    charts.update(series);
    // Tables are rebuilt only when what they show changed (a click on a download is not lost).
    const latest = checkpoints.data[0]?.step ?? 0;
    const current = jobs.data[0] ?? null;
    replaceIfChanged(shown, "facts", JSON.stringify([latest, current?.id, current?.status, current?.step]), () => {
      facts.replaceChildren(...factRows(found, latest, current));
      useStep.textContent = `The latest step (${formatNumber(latest)}), under the name it is served by. Set SRL_API_KEY to an API key of ${found.entity} first.`;
      snippets.show(found, latest);
    });
    replaceIfChanged(shown, "checkpoints", JSON.stringify([checkpoints.data, jobs.data.map((job) => [job.step, job.trainingEnd])]), () => {
      checkpointsCue.box.replaceChildren(checkpointTable(found, checkpoints.data, jobs.data, reload));
      checkpointsNote.textContent = checkpoints.hasMore ? `The newest ${CHECKPOINTS_SHOWN} checkpoints.` : "";
      checkpointsCue.update();
    });
    replaceIfChanged(shown, "jobs", JSON.stringify(jobs.data), () => jobsBox.replaceChildren(jobsTable(modelId, jobs.data, reload)));
    // A running job's duration ticks in its cell: rebuilding the table would take a keyboard user's focus off its Cancel button.
    for (const job of jobs.data.filter((each) => each.status === "running")) {
      const cell = jobsBox.querySelector(`td[data-duration-job="${job.id}"]`);
      if (cell) cell.textContent = jobDuration(job);
    }
  };
  /** After an action: the tables again now, not at the next refresh. */
  const reload = () => void load().catch((error: unknown) => context.signal.aborted || showError(readable(error)));
  await keepLoaded(context, REFRESH_MS, load);
  return page;
}

function replaceIfChanged<K extends string>(shown: Record<K, string>, key: K, signature: string, render: () => void): void {
  if (shown[key] === signature) return;
  shown[key] = signature;
  render();
}

function fact(term: string, ...value: (Node | string)[]): HTMLElement[] {
  return [h("dt", {}, term), h("dd", {}, ...value)];
}

function factRows(model: Model, latest: number, job: TrainingJob | null): HTMLElement[] {
  return [
    ...fact("Base model", model.baseModel),
    ...fact("Latest step", h("span", { "data-fact": "latest-step" }, formatNumber(latest)), " ", h("a", { href: playgroundHref(model, latest), class: "try" }, "try it")),
    ...fact(
      "Training",
      job
        ? h("span", { "data-fact": "job" }, h("a", { href: `#/jobs/${job.id}`, class: "badge-link" }, statusBadge(job.status)), " ", h("a", { href: `#/jobs/${job.id}` }, `${job.type.toUpperCase()} job ${job.id.slice(0, 8)}`), " · ", timeCell(job.createdAt))
        : h("span", { class: "muted", "data-fact": "job" }, "no jobs yet"),
    ),
    ...fact("Created", model.createdAt ? timeLong(model.createdAt) : "—"),
    ...fact("Id", shortId(model.id)),
  ];
}

function jobsTable(modelId: string, jobs: readonly TrainingJob[], changed: () => void): HTMLElement {
  if (jobs.length === 0) {
    return emptyState(
      "No training jobs yet. Send scored trajectory groups (sampled with logprobs) to train the next checkpoint:",
      `curl -s ${apiBase()}/preview/training-jobs \\\n  -H "Authorization: Bearer $SRL_API_KEY" -H "Content-Type: application/json" \\\n  -d '{"model_id": "${modelId}", "trajectory_groups": [{"trajectories": [\n        {"messages_and_choices": [...], "reward": 1},\n        {"messages_and_choices": [...], "reward": 0}]}]}'`,
    );
  }
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      { class: "jobs-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Job"), h("th", {}, "Type"), h("th", {}, "Status"), h("th", { class: "num" }, "Step made"), h("th", {}, "Created"), h("th", {}, "Duration"), h("th", {}, h("span", { class: "visually-hidden" }, "Actions")))),
      h(
        "tbody",
        {},
        ...jobs.map((job) =>
          h(
            "tr",
            { "data-job-id": job.id },
            h("td", {}, linkedShortId(job.id, `#/jobs/${job.id}`)),
            h("td", {}, job.type.toUpperCase()),
            h("td", {}, statusBadge(job.status), job.errorMessage ? h("div", { class: "row-error", title: job.errorMessage }, job.errorMessage) : ""),
            h("td", { class: "num" }, job.step === undefined ? "—" : formatNumber(job.step)),
            h("td", {}, timeCell(job.createdAt)),
            h("td", { "data-duration-job": job.id }, jobDuration(job)),
            h("td", {}, cancellable(job) ? cancelJobButton(job, changed) : ""),
          ),
        ),
      ),
    ),
  );
}

/** Deletes the model after its name is typed, then goes back to the list. */
async function deleteModel(model: Model, button: HTMLElement): Promise<void> {
  const deleted = await confirmAction({
    title: `Delete ${modelTitle(model)}?`,
    message: [
      h("p", {}, "This deletes the model ", h("strong", {}, modelTitle(model)), ", every checkpoint and adapter of it, its logged trajectories, its training jobs (unfinished ones are cancelled) and its run's curves. It cannot be undone."),
    ],
    typeToConfirm: model.name,
    confirmLabel: "Delete this model",
    action: async () => void (await models.deleteModel({ modelId: model.id })),
  });
  if (deleted) location.hash = "#/";
  else button.focus();
}
