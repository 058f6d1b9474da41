// A model's checkpoints, newest first: the step and its actions (try in the playground, download
// the adapter, delete) stay in sight on the left, the metrics follow in columns that scroll.
import type { Checkpoint, Model } from "../../../gen/srl/v1/models_pb.js";
import type { TrainingJob } from "../../../gen/srl/v1/training_pb.js";
import { models, readable, training } from "../api.js";
import { compareMetricNames } from "../charts/order.js";
import { confirmAction } from "../confirm.js";
import { h, showError } from "../dom.js";
import { chartName, formatNumber, timeCell } from "../format.js";
import { modelTitle, playgroundHref } from "./links.js";
import "./views.css";

/** The table; `changed` runs after a checkpoint was deleted. */
export function checkpointTable(model: Model, checkpoints: readonly Checkpoint[], jobs: readonly TrainingJob[], changed: () => void): HTMLElement {
  const names = [...new Set(checkpoints.flatMap((checkpoint) => Object.keys(checkpoint.metrics)))].sort((a, b) => compareMetricNames(chartName(a), chartName(b)));
  const madeBy = new Map(jobs.filter((job) => job.step !== undefined).map((job) => [job.step as number, job]));
  const head = h(
    "tr",
    {},
    h("th", { class: "sticky step num" }, "Step"),
    h("th", { class: "sticky actions" }, "Actions"),
    h("th", {}, "Made"),
    ...names.map((name) => h("th", { class: "num", "data-metric": chartName(name), title: name === chartName(name) ? name : `${name} (charted as ${chartName(name)})` }, chartName(name))),
  );
  const rows = checkpoints.map((checkpoint) => {
    const job = madeBy.get(checkpoint.step);
    const step = checkpoint.step;
    return h(
      "tr",
      { "data-step": String(step) },
      h("td", { class: "sticky step num" }, formatNumber(step)),
      h(
        "td",
        { class: "sticky actions" },
        h("a", { href: playgroundHref(model, step), class: "try", "data-try": String(step), "aria-label": `try step ${step} in the playground` }, "try"),
        // Step 0 is the base model itself: nothing to download or delete.
        step > 0 ? downloadButton(`${model.project}/${model.name}:step${step}`, step) : null,
        step > 0 ? deleteButton(model, step, changed) : null,
      ),
      h("td", {}, step === 0 ? h("span", { class: "muted" }, "base model") : job ? h("a", { href: `#/jobs/${job.id}`, title: "The job that made it" }, timeCell(job.trainingEnd)) : "—"),
      ...names.map((name) => {
        const value = checkpoint.metrics[name];
        return h("td", { class: "num", "data-metric": chartName(name) }, value === undefined ? "—" : formatNumber(value));
      }),
    );
  });
  return h("table", { class: "checkpoints-table" }, h("thead", {}, head), h("tbody", {}, ...rows));
}

function deleteButton(model: Model, step: number, changed: () => void): HTMLElement {
  const button = h("button", { type: "button", class: "link danger-link", "data-delete-step": String(step), "aria-label": `delete step ${step}` }, "delete");
  button.addEventListener("click", () => {
    void confirmAction({
      title: `Delete step ${step}?`,
      message: [
        h("p", {}, "The checkpoint ", h("strong", {}, `${modelTitle(model)} step ${step}`), " and its adapter will be deleted. Its name stops being served; the model's other steps stay."),
      ],
      confirmLabel: `Delete step ${step}`,
      // A step already gone (deleted from another tab) counts as done: the table refreshes either way.
      action: async () => void (await models.deleteCheckpoints({ modelId: model.id, steps: [step] })),
    }).then((deleted) => {
      if (deleted) changed();
      else button.focus();
    });
  });
  return button;
}

/** Downloads a checkpoint's adapter through the API (the key stays in a header, never in a URL). */
function downloadButton(url: string, step: number): HTMLElement {
  const button = h("button", { type: "button", class: "link", "data-download": url, "aria-label": `download step ${step}'s adapter` }, "download");
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
