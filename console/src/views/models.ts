// The models list: each model's latest step and its newest job's status at a glance, checkboxes to
// compare runs, and what to run when there is no model yet.
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { models, readable } from "../api.js";
import { h, showError, statusBadge } from "../dom.js";
import { apiBase, emptyState, formatNumber, shortId, timeCell } from "../format.js";
import { everyWhileShown, type ViewContext } from "../view.js";
import "./views.css";
import { mapPooled } from "../lists.js";
import { modelTitle } from "./links.js";
import { newModelButton } from "./new-model.js";
import { latestStep, newestJob } from "./run-data.js";

const PAGE = 100;
/** Requests in flight at once when filling the rows. */
const PARALLEL = 4;
const REFRESH_MS = 3000;
/** Idle models are looked at again every this many refreshes (active ones every time). */
const IDLE_EVERY = 5;

interface Row {
  element: HTMLTableRowElement;
  model: Model;
  step: HTMLElement;
  job: HTMLElement;
  active: boolean;
}

export async function modelsView(context: ViewContext): Promise<HTMLElement> {
  const section = h("section", { class: "models-list run-view" }, h("h1", {}, "Models"));
  const rows: Row[] = [];
  const chosen = new Set<string>();
  const compare = h("button", { type: "button", "data-action": "compare", disabled: "" }, "Compare runs");
  const chosenCount = h("span", { class: "muted" }, "Pick two or more models to compare their runs.");
  compare.addEventListener("click", () => {
    location.hash = `#/compare?models=${[...chosen].map(encodeURIComponent).join(",")}`;
  });
  const onChoose = (id: string, on: boolean) => {
    if (on) chosen.add(id);
    else chosen.delete(id);
    compare.toggleAttribute("disabled", chosen.size < 2);
    compare.textContent = chosen.size >= 2 ? `Compare ${chosen.size} runs` : "Compare runs";
    chosenCount.textContent = chosen.size >= 2 ? "" : "Pick two or more models to compare their runs.";
  };
  const body = h("tbody", {});
  const table = h(
    "table",
    { class: "models-table" },
    h(
      "thead",
      {},
      h("tr", {}, h("th", { class: "pick" }, h("span", { class: "visually-hidden" }, "Compare")), h("th", {}, "Name"), h("th", {}, "Project"), h("th", { class: "wide-only" }, "Base model"), h("th", { class: "num" }, "Latest step"), h("th", {}, "Training"), h("th", {}, "Created"), h("th", { class: "wide-only" }, "Id")),
    ),
    body,
  );
  const more = h("button", { type: "button", class: "secondary", hidden: "" }, "Show more models");

  let after: string | undefined;
  const loadPage = async (): Promise<Model[]> => {
    const page = await models.listModels({ limit: PAGE, after }, { signal: context.signal });
    after = page.hasMore ? page.lastId : undefined;
    more.hidden = !page.hasMore;
    const added = page.data.map((model) => newRow(model, onChoose));
    rows.push(...added);
    body.append(...added.map((row) => row.element));
    void fill(added, context.signal);
    return page.data;
  };
  more.addEventListener("click", () => void loadPage().catch((error: unknown) => showError(readable(error))));

  try {
    const first = await loadPage();
    if (first.length === 0) {
      section.append(await emptyModels(context.signal));
      return section;
    }
  } catch (error) {
    if (!context.signal.aborted) showError(readable(error));
    return section;
  }
  section.append(h("div", { class: "toolbar" }, newModelButton(), compare, chosenCount), h("div", { class: "table-scroll" }, table), more);

  let tick = 0;
  everyWhileShown(context, REFRESH_MS, async () => {
    tick++;
    await fill(
      rows.filter((row) => row.active || tick % IDLE_EVERY === 0),
      context.signal,
    );
  });
  return section;
}

/** No model yet: the form's button first, and the same through the API with the catalog's first base model. */
async function emptyModels(signal: AbortSignal): Promise<HTMLElement> {
  let base = "BASE_MODEL";
  try {
    base = (await models.listBaseModels({}, { signal })).models[0] ?? base;
  } catch {
    // The snippet keeps a placeholder; the form reads the catalog again and says what went wrong.
  }
  const empty = emptyState(
    "No models yet. Register one on a base model (it is created in the API key's entity), here or through the API:",
    `curl -s ${apiBase()}/preview/models \\\n  -H "Authorization: Bearer $SRL_API_KEY" -H "Content-Type: application/json" \\\n  -d '{"project": "demo", "name": "agent-001", "base_model": ${JSON.stringify(base)}}'`,
  );
  empty.querySelector("p")?.after(h("p", {}, newModelButton()));
  return empty;
}

function newRow(model: Model, onChoose: (id: string, on: boolean) => void): Row {
  const pick = h("input", { type: "checkbox", name: "compare", value: model.id, "aria-label": `Compare ${modelTitle(model)}` });
  pick.addEventListener("change", () => onChoose(model.id, pick.checked));
  const step = h("td", { class: "num", "data-col": "latest-step" }, h("span", { class: "muted" }, "…"));
  const job = h("td", { "data-col": "job" }, h("span", { class: "muted" }, "…"));
  const element = h(
    "tr",
    { "data-model-id": model.id },
    h("td", { class: "pick" }, pick),
    h("td", {}, h("a", { href: `#/models/${model.id}`, class: "model-name" }, model.name)),
    h("td", {}, model.project),
    h("td", { class: "wide-only" }, model.baseModel),
    step,
    job,
    h("td", { "data-col": "created" }, timeCell(model.createdAt)),
    h("td", { class: "wide-only" }, shortId(model.id)),
  );
  return { element, model, step, job, active: false };
}

/** Fills each row's latest step and job status, a few models at a time. */
async function fill(rows: Row[], signal: AbortSignal): Promise<void> {
  await mapPooled(rows, PARALLEL, async (row) => {
    if (signal.aborted) return;
    try {
      const [step, job] = await Promise.all([latestStep(row.model.id, signal), newestJob(row.model.id, signal)]);
      showRow(row, step, job);
    } catch (error) {
      if (!signal.aborted) showError(readable(error));
    }
  });
}

function showRow(row: Row, step: number, job: TrainingJob | null): void {
  row.active = job?.status === "queued" || job?.status === "running";
  row.step.replaceChildren(formatNumber(step));
  row.job.replaceChildren(job ? h("a", { href: `#/jobs/${job.id}`, class: "badge-link", title: `${job.type.toUpperCase()} job ${job.id}` }, statusBadge(job.status)) : h("span", { class: "muted" }, "no jobs"));
}
