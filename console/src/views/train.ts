// A model's train view: upload SFT data (checked in the page first), start an SFT job on it, or
// start an RL job from logged trajectory groups; a started job is followed on its job page.
import { readable } from "../api.js";
import { h, showError } from "../dom.js";
import { datasetUpload } from "../train/dataset-upload.js";
import { rlForm } from "../train/rl-form.js";
import { sftForm } from "../train/sft-form.js";
import "../train/train.css";
import type { ViewContext } from "../view.js";
import { crumbs, modelNotFound, modelTitle } from "./links.js";
import { findModel } from "./run-data.js";

export async function trainView(modelId: string, context: ViewContext): Promise<HTMLElement> {
  let model;
  try {
    model = await findModel(modelId, context.signal);
  } catch (error) {
    if (!context.signal.aborted) showError(readable(error));
    return h("section", {}, h("h1", {}, "Train"), h("p", {}, "The model could not be read. ", h("a", { href: "#/" }, "Back to the models.")));
  }
  if (!model) return modelNotFound(modelId);

  const follow = (jobId: string) => {
    location.hash = `#/jobs/${jobId}`;
  };
  const sft = sftForm(model, follow);
  const upload = datasetUpload({ project: model.project, defaultName: `${model.name}-sft`, signal: context.signal, onUploaded: (artifact) => sft.useDataset(artifact.url) });
  const title = modelTitle(model);
  return h(
    "div",
    { class: "train-view" },
    h(
      "section",
      { class: "page-header" },
      crumbs(h("a", { href: `#/models/${model.id}` }, title), "train"),
      h("h1", {}, `Train ${title}`),
      h("p", { class: "muted" }, `Base model ${model.baseModel}. Each job trains the next checkpoint from the latest one and serves it as soon as it is done.`),
    ),
    upload,
    sft.element,
    rlForm(model, context.signal, follow),
  );
}
