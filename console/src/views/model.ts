// A model: what it is and where it stands (latest step, current job), its run curves, its
// checkpoints (metrics in columns, adapter downloads, a link to try each in the playground) and its
// jobs. Refreshed while shown; the charts get new data in place, so zoom, smoothing and log scales stay.
import type { Checkpoint, Model } from "../../../gen/srl/v1/models_pb.js";
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { models, readable, training } from "../api.js";
import { RunCharts, type RunSeries } from "../chart.js";
import { compareMetricNames } from "../charts/order.js";
import { h, showError, statusBadge } from "../dom.js";
import { apiBase, chartName, emptyState, formatNumber, shortId, timeCell, timeLong } from "../format.js";
import { keepLoaded, type ViewContext } from "../view.js";
import { jobDuration } from "./job-time.js";
import { crumbs, linkedShortId, modelTitle, playgroundHref } from "./links.js";
import { findModel, RunHistory } from "./run-data.js";
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
    return h("section", {}, h("h1", {}, "Model not found"), h("p", {}, "No model of yours has the id ", h("code", {}, modelId), ". ", h("a", { href: "#/" }, "Back to the models.")));
  }
  const found = model;
  const facts = h("dl", { class: "facts" });
  const charts = new RunCharts(
    emptyState(
      "No metrics yet. Log scored trajectories to draw reward curves (each training job adds its train/* curves):",
      `curl -s ${apiBase()}/preview/models/${modelId}/log \\\n  -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \\\n  -d '{"split": "val", "trajectory_groups": [{"trajectories": [{"reward": 0.5}, {"reward": 0.9}]}]}'`,
    ),
  );
  context.signal.addEventListener("abort", () => charts.destroy());
  const checkpointsBox = h("div", { class: "table-scroll" });
  const jobsBox = h("div", {});
  const page = h(
    "div",
    { class: "model-page run-view" },
    h(
      "section",
      { class: "page-header" },
      crumbs(modelTitle(found)),
      h("h1", {}, modelTitle(found)),
      facts,
      h("p", { class: "page-links" }, h("a", { href: `#/models/${modelId}/trajectories` }, "Trajectories"), h("a", { href: `#/compare?models=${encodeURIComponent(modelId)}` }, "Compare with other runs")),
    ),
    h("section", { class: "charts-section" }, h("h2", {}, "Run curves"), charts.element),
    h("section", {}, h("h2", {}, "Checkpoints"), checkpointsBox),
    h("section", {}, h("h2", {}, "Training jobs"), jobsBox),
  );

  const history = new RunHistory(found.runId);
  const shown = { checkpoints: "", jobs: "", facts: "" };
  await keepLoaded(context, REFRESH_MS, async () => {
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
    replaceIfChanged(shown, "facts", JSON.stringify([latest, current?.id, current?.status, current?.step]), () => facts.replaceChildren(...factRows(found, latest, current)));
    replaceIfChanged(shown, "checkpoints", JSON.stringify([checkpoints.data, jobs.data.map((job) => [job.step, job.trainingEnd])]), () =>
      checkpointsBox.replaceChildren(checkpointTable(found, checkpoints.data, jobs.data), checkpoints.hasMore ? h("p", { class: "muted" }, `The newest ${CHECKPOINTS_SHOWN} checkpoints.`) : ""),
    );
    replaceIfChanged(shown, "jobs", JSON.stringify([jobs.data, running(jobs.data) ? Date.now() : 0]), () => jobsBox.replaceChildren(jobsTable(modelId, jobs.data)));
  });
  return page;
}

function replaceIfChanged<K extends string>(shown: Record<K, string>, key: K, signature: string, render: () => void): void {
  if (shown[key] === signature) return;
  shown[key] = signature;
  render();
}

function running(jobs: readonly TrainingJob[]): boolean {
  return jobs.some((job) => job.status === "running");
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

/** Checkpoints newest first, one column per metric under the name its chart has. */
function checkpointTable(model: Model, checkpoints: readonly Checkpoint[], jobs: readonly TrainingJob[]): HTMLElement {
  const names = [...new Set(checkpoints.flatMap((checkpoint) => Object.keys(checkpoint.metrics)))].sort((a, b) => compareMetricNames(chartName(a), chartName(b)));
  const madeBy = new Map(jobs.filter((job) => job.step !== undefined).map((job) => [job.step as number, job]));
  const head = h(
    "tr",
    {},
    h("th", { class: "sticky num" }, "Step"),
    h("th", {}, "Made"),
    ...names.map((name) => h("th", { class: "num", "data-metric": chartName(name), title: name === chartName(name) ? name : `${name} (charted as ${chartName(name)})` }, chartName(name))),
    h("th", {}, "Adapter"),
    h("th", {}, "Playground"),
  );
  const rows = checkpoints.map((checkpoint) => {
    const job = madeBy.get(checkpoint.step);
    return h(
      "tr",
      { "data-step": String(checkpoint.step) },
      h("td", { class: "sticky num" }, formatNumber(checkpoint.step)),
      h("td", {}, checkpoint.step === 0 ? h("span", { class: "muted" }, "base model") : job ? h("a", { href: `#/jobs/${job.id}`, title: "The job that made it" }, timeCell(job.trainingEnd)) : "—"),
      ...names.map((name) => {
        const value = checkpoint.metrics[name];
        return h("td", { class: "num", "data-metric": chartName(name) }, value === undefined ? "—" : formatNumber(value));
      }),
      // Step 0 is the base model itself: nothing to download.
      h("td", {}, checkpoint.step > 0 ? downloadButton(`${model.project}/${model.name}:step${checkpoint.step}`) : ""),
      h("td", {}, h("a", { href: playgroundHref(model, checkpoint.step), class: "try", "data-try": String(checkpoint.step) }, "try this step")),
    );
  });
  return h("table", { class: "checkpoints-table" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

function jobsTable(modelId: string, jobs: readonly TrainingJob[]): HTMLElement {
  if (jobs.length === 0) {
    return emptyState(
      "No training jobs yet. Send scored trajectory groups (sampled with logprobs) to train the next checkpoint:",
      `curl -s ${apiBase()}/preview/training-jobs \\\n  -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \\\n  -d '{"model_id": "${modelId}", "trajectory_groups": [{"trajectories": [\n        {"messages_and_choices": [...], "reward": 1},\n        {"messages_and_choices": [...], "reward": 0}]}]}'`,
    );
  }
  return h(
    "div",
    { class: "table-scroll" },
    h(
      "table",
      { class: "jobs-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Job"), h("th", {}, "Type"), h("th", {}, "Status"), h("th", { class: "num" }, "Step made"), h("th", {}, "Created"), h("th", {}, "Duration"))),
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
            h("td", {}, jobDuration(job)),
          ),
        ),
      ),
    ),
  );
}

/** Downloads a checkpoint's adapter through the API (the key stays in a header, never in a URL). */
function downloadButton(url: string): HTMLElement {
  const button = h("button", { type: "button", class: "link", "data-download": url }, "download");
  button.addEventListener("click", () => {
    void (async () => {
      button.textContent = "downloading…";
      try {
        const parts: Uint8Array<ArrayBuffer>[] = [];
        let filename = "adapter.gguf";
        for await (const chunk of training.downloadArtifactFile({ url })) {
          if (chunk.filename) filename = chunk.filename;
          parts.push(new Uint8Array(chunk.data));
        }
        const link = h("a", { href: URL.createObjectURL(new Blob(parts, { type: "application/octet-stream" })), download: filename });
        link.click();
        setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
        showError(null);
      } catch (error) {
        showError(readable(error));
      } finally {
        button.textContent = "download";
      }
    })();
  });
  return button;
}
