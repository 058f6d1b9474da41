// Step 2 of the train view: an SFT job on an uploaded dataset (the one just uploaded, or any earlier
// version named here) with its SftTrainingConfig; on success the page goes to the job.
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import type { Model } from "../../../gen/srl/v1/models_pb.js";
import { SftTrainingConfigSchema } from "../../../gen/srl/v1/training_pb.js";
import { readable, training } from "../api.js";
import { h } from "../dom.js";
import { numberField, readNumber, FieldError } from "./fields.js";

/** Server defaults (services/training/trainer/sft/config.ts, spec §5.1 for LoRA). */
const DEFAULTS = { learningRate: "5e-5", rank: 8, alpha: 16 };

export interface SftForm {
  element: HTMLElement;
  /** Fills the data field with a dataset just uploaded. */
  useDataset(url: string): void;
}

export function sftForm(model: Model, onStarted: (jobId: string) => void): SftForm {
  const data = h("input", { id: "sft-data", name: "data", required: "", autocomplete: "off", placeholder: `${model.name}-sft:latest`, spellcheck: "false" });
  const batch = h("input", { id: "sft-batch-size", name: "batch-size", placeholder: "auto", inputmode: "numeric", autocomplete: "off" });
  const rate = h("input", { id: "sft-learning-rate", name: "learning-rate", placeholder: DEFAULTS.learningRate, autocomplete: "off", spellcheck: "false" });
  const turns = h("select", { id: "sft-assistant-turns", name: "assistant-turns" }, h("option", { value: "all" }, "all assistant turns (default)"), h("option", { value: "last" }, "only the last assistant turn"));
  const rank = numberField("sft-lora-rank", String(DEFAULTS.rank));
  const alpha = numberField("sft-lora-alpha", String(DEFAULTS.alpha));
  const message = h("p", { class: "form-message", role: "alert", hidden: "" });
  const submit = h("button", { type: "submit" }, "Start SFT job");

  const form = h(
    "form",
    { class: "train-form", novalidate: "" },
    field("sft-data", "Training data", data, `a dataset of ${model.project}: name:vN or name:latest, or a wandb-artifact:/// URL`),
    field("sft-batch-size", "Batch size", batch, 'conversations per optimizer step; empty or "auto": 2'),
    field("sft-learning-rate", "Learning rate", rate, `default ${DEFAULTS.learningRate}; several comma-separated values: one per batch`),
    field("sft-assistant-turns", "Train on", turns, "which assistant messages carry the loss"),
    field("sft-lora-rank", "LoRA rank", rank, `default ${DEFAULTS.rank}; the model's first job fixes it`),
    field("sft-lora-alpha", "LoRA alpha", alpha, `default ${DEFAULTS.alpha}`),
    h("div", { class: "train-actions" }, submit),
    message,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    message.hidden = true;
    let url: string;
    let config: JsonObject;
    try {
      url = dataUrl(model, data.value);
      config = {};
      const size = batch.value.trim();
      if (size !== "" && size !== "auto") config.batch_size = readNumber(batch, "Batch size", { integer: true, min: 1 });
      if (rate.value.trim() !== "") {
        const rates = rate.value.split(",").map((part) => Number(part.trim()));
        if (rates.some((value) => !Number.isFinite(value) || value < 0)) throw new FieldError(rate, "Learning rate must be a non-negative number (or comma-separated numbers), e.g. 5e-5.");
        config.learning_rate = rates.length === 1 ? (rates[0] as number) : rates;
      }
      config.assistant_turns = turns.value;
      const lora: JsonObject = {};
      if (rank.value.trim() !== "") lora.rank = readNumber(rank, "LoRA rank", { integer: true, min: 1, max: 1024 });
      if (alpha.value.trim() !== "") lora.alpha = readNumber(alpha, "LoRA alpha", { min: 0 });
      if (Object.keys(lora).length > 0) config.lora_config = lora;
    } catch (error) {
      showProblem(message, error);
      return;
    }
    submit.disabled = true;
    submit.textContent = "Starting…";
    training.createSftTrainingJob({ modelId: model.id, trainingDataUrl: url, config: fromJson(SftTrainingConfigSchema, config) }).then(
      (job) => onStarted(job.id),
      (error: unknown) => {
        submit.disabled = false;
        submit.textContent = "Start SFT job";
        message.hidden = false;
        message.textContent = `The job was not started: ${readable(error)}. Check the data name (upload it above if it is not there yet) and the settings, then start again.`;
      },
    );
  });
  return {
    element: h("section", { class: "train-step", "aria-labelledby": "train-sft-title" }, h("h2", { id: "train-sft-title" }, "2. Start an SFT job"), form),
    useDataset(url) {
      data.value = url;
    },
  };
}

/** A full artifact URL as typed, or `name[:vN|:latest]` in the model's entity and project. */
function dataUrl(model: Model, typed: string): string {
  const value = typed.trim();
  if (value === "") throw new Error("Name the training data: upload a file above, or type an uploaded dataset's name (name:v0 or name:latest).");
  if (value.startsWith("wandb-artifact:") || value.startsWith("https://")) return value;
  const match = /^([^/:\s]+)(?::(v\d+|latest))?$/.exec(value);
  if (!match) throw new Error(`"${value}" is not a dataset name: write name:v0 or name:latest (or a wandb-artifact:/// URL).`);
  return `wandb-artifact:///${model.entity}/${model.project}/${match[1]}:${match[2] ?? "latest"}`;
}

function field(id: string, label: string, input: HTMLElement, hint: string): HTMLElement {
  const hintId = `${id}-hint`;
  input.setAttribute("aria-describedby", hintId);
  return h("div", { class: "train-field" }, h("label", { for: id }, label), input, h("span", { class: "muted hint", id: hintId }, hint));
}

function showProblem(message: HTMLElement, error: unknown): void {
  message.hidden = false;
  message.textContent = error instanceof Error ? error.message : String(error);
  if (error instanceof FieldError) error.input.focus();
}
