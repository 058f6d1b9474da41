import { models, readable } from "../api.js";
import { h, showError } from "../dom.js";

export async function modelsView(): Promise<HTMLElement> {
  const page = await models.listModels({ limit: 100 }).catch((error: unknown) => {
    showError(readable(error));
    return null;
  });
  const rows = (page?.data ?? []).map((model) =>
    h("tr", {}, h("td", {}, h("a", { href: `#/models/${model.id}` }, model.name)), h("td", {}, model.project), h("td", {}, model.baseModel), h("td", { class: "muted" }, model.id)),
  );
  return h(
    "section",
    {},
    h("h1", {}, "Models"),
    rows.length === 0 ? h("p", { class: "muted" }, "No models yet: POST /v1/preview/models registers one.") : h("table", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Project"), h("th", {}, "Base model"), h("th", {}, "Id")), ...rows),
  );
}
