// Registering a model on a base model: a modal form (project, name, and the catalog's base models
// with what each can do), sent through CreateModel; on success the new model's page opens. The
// API's refusals are shown in the form next to what to change.
import { Code, ConnectError } from "@connectrpc/connect";
import type { BaseModelDetails } from "../../../gen/srl/v1/system_pb.js";
import { models, readable } from "../api.js";
import { h } from "../dom.js";
import { formatNumber } from "../format.js";
import "./views.css";

/** What the API accepts as a project or model name (services/models/registry.ts). */
const NAME_PATTERN = "[A-Za-z0-9][A-Za-z0-9._\\-]{0,127}";
const NAME_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit.";

/** The "New model" button: opens the form. */
export function newModelButton(label = "New model"): HTMLButtonElement {
  const button = h("button", { type: "button", "data-action": "new-model" }, label);
  button.addEventListener("click", () => void openNewModel(button));
  return button;
}

async function openNewModel(opener: HTMLElement): Promise<void> {
  const project = field("project", "Project", "demo");
  const name = field("name", "Model name", "");
  const bases = h("fieldset", { class: "base-models" }, h("legend", {}, "Base model"), h("p", { class: "muted" }, "Loading the base models…"));
  const error = h("p", { class: "form-error", role: "alert", hidden: "" });
  const create = h("button", { type: "submit", "data-submit": "" }, "Create model");
  const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
  const form = h(
    "form",
    { class: "new-model-form", novalidate: "" },
    h("h2", { id: "new-model-title" }, "New model"),
    h("p", { class: "muted" }, "A model is a LoRA adapter trained on a base model; it starts at step 0, the base model itself."),
    project.element,
    name.element,
    bases,
    error,
    h("div", { class: "confirm-buttons" }, cancel, create),
  );
  const dialog = h("dialog", { class: "new-model-dialog", "aria-labelledby": "new-model-title" }, form);
  document.body.append(dialog);
  const close = () => {
    if (dialog.open) dialog.close();
  };
  dialog.addEventListener("close", () => {
    dialog.remove();
    opener.focus();
  });
  cancel.addEventListener("click", close);
  dialog.showModal();
  project.input.focus();
  project.input.select();

  let catalog: BaseModelDetails[] = [];
  try {
    catalog = (await models.listBaseModelDetails({})).data;
    bases.replaceChildren(h("legend", {}, "Base model"), ...catalog.map((base, index) => baseOption(base, index === catalog.findIndex((one) => one.trainable !== false))));
    if (catalog.length === 0) bases.append(h("p", {}, "This deployment offers no base models: set BASE_MODELS on the server."));
  } catch (failure) {
    bases.replaceChildren(h("legend", {}, "Base model"), h("p", { class: "form-error" }, `The base models could not be read: ${readable(failure)}. Close this form and open it again.`));
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void (async () => {
      const chosen = form.querySelector<HTMLInputElement>("input[name=base]:checked");
      const problems = [project.check(), name.check()].filter((problem) => problem !== null);
      if (!chosen) problems.push("Choose a base model.");
      showProblem(problems[0] ?? null);
      if (problems.length > 0) return;
      create.toggleAttribute("disabled", true);
      create.textContent = "Creating…";
      try {
        const model = await models.createModel({ project: project.input.value.trim(), name: name.input.value.trim(), baseModel: chosen?.value ?? "" });
        close();
        location.hash = `#/models/${model.id}`;
      } catch (failure) {
        const connect = ConnectError.from(failure);
        if (connect.code === Code.AlreadyExists) {
          name.invalid(`Project "${project.input.value.trim()}" already has a model named "${name.input.value.trim()}": choose another name (or open that model from the list).`);
          name.input.focus();
          showProblem(null);
        } else showProblem(`${readable(failure)}. Change what it names and create again.`);
      } finally {
        create.toggleAttribute("disabled", false);
        create.textContent = "Create model";
      }
    })();
  });

  function showProblem(problem: string | null): void {
    error.hidden = problem === null;
    error.textContent = problem ?? "";
  }
}

interface Field {
  element: HTMLElement;
  input: HTMLInputElement;
  /** Checks the value, marks the field; the problem in words, or null. */
  check(): string | null;
  invalid(message: string): void;
}

function field(id: string, label: string, value: string): Field {
  const hint = h("span", { class: "field-hint", id: `new-model-${id}-hint` }, NAME_RULE);
  const input = h("input", { id: `new-model-${id}`, name: id, type: "text", required: "", pattern: NAME_PATTERN, autocomplete: "off", spellcheck: "false", "aria-describedby": hint.id });
  input.value = value;
  const invalid = (message: string) => {
    input.setAttribute("aria-invalid", "true");
    hint.textContent = message;
    hint.classList.add("form-error");
  };
  input.addEventListener("input", () => {
    input.removeAttribute("aria-invalid");
    hint.textContent = NAME_RULE;
    hint.classList.remove("form-error");
  });
  const check = () => {
    const text = input.value.trim();
    const problem = text === "" ? `${label}: required.` : new RegExp(`^${NAME_PATTERN}$`).test(text) ? null : `${label}: ${NAME_RULE}`;
    if (problem) invalid(problem);
    return problem;
  };
  return { element: h("div", { class: "field" }, h("label", { for: input.id }, label), input, hint), input, check, invalid };
}

/** A radio for one base model, labelled with what it can do; one that cannot be trained is offered disabled, with why. */
function baseOption(base: BaseModelDetails, checked: boolean): HTMLElement {
  const id = `new-model-base-${base.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const radio = h("input", { type: "radio", name: "base", id, value: base.name, "aria-describedby": `${id}-details` });
  radio.checked = checked;
  if (base.trainable === false) radio.disabled = true;
  const facts: string[] = [];
  facts.push(base.trainable === true ? "trainable" : base.trainable === false ? "not trainable" : "trainability checked at its first job");
  if (base.quantized !== undefined) facts.push(base.quantized ? "quantized" : "not quantized");
  if (base.contextLength !== undefined) facts.push(`${formatNumber(base.contextLength)} tokens of context`);
  if (base.architecture) facts.push(base.architecture);
  return h(
    "div",
    { class: "base-option", "data-base": base.name },
    radio,
    h("label", { for: id }, h("strong", {}, base.name), h("span", { class: "muted", id: `${id}-details` }, ` ${facts.join(" · ")}`, base.trainingNote ? h("span", { class: "base-note" }, base.trainingNote) : null)),
  );
}
