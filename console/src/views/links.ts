// Links the run views share: a short id that is also a link, the playground on a checkpoint, and
// a model's name as people know it.
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import { h } from "../dom.js";
import { shortId } from "../format.js";

/** shortId (8 characters, copy button) whose text links to `href` (the copy button stays outside the link). */
export function linkedShortId(id: string, href: string): HTMLElement {
  const element = shortId(id);
  const code = element.querySelector("code");
  code?.replaceWith(h("a", { href, title: id }, h("code", {}, id.slice(0, 8))));
  return element;
}

/** The name a checkpoint is served under (the playground's model field, an OpenAI client's `model`). */
export function checkpointName(model: Model, step: number): string {
  return `wandb-artifact:///${model.entity}/${model.project}/${model.name}:step${step}`;
}

export function playgroundHref(model: Model, step: number): string {
  return `#/playground?model=${encodeURIComponent(checkpointName(model, step))}`;
}

export function modelTitle(model: Model): string {
  return `${model.project}/${model.name}`;
}

/** "Models / project/name / …": where this page sits. */
export function crumbs(...parts: (HTMLElement | string)[]): HTMLElement {
  const trail: (HTMLElement | string)[] = [h("a", { href: "#/" }, "Models")];
  for (const part of parts) trail.push(" / ", part);
  return h("p", { class: "crumbs" }, ...trail);
}

/** What a model's pages show for an id that names no model of the caller's entity. */
export function modelNotFound(modelId: string): HTMLElement {
  return h("section", {}, h("h1", {}, "Model not found"), h("p", {}, "No model of yours has the id ", h("code", {}, modelId), ". ", h("a", { href: "#/" }, "Back to the models.")));
}
