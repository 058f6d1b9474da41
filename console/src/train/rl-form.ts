// Step 3 of the train view: an RL job from logged trajectory groups. The model's batches are listed
// (split, step, groups, mean reward, time); the chosen one's groups are read page by page, checked
// for what they can teach, and sent to CreateTrainingJob with the learning rate.
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import type { Model, TrajectoryBatch } from "../../../gen/srl/v1/models_pb.js";
import { TrajectoryGroupSchema } from "../../../gen/srl/v1/trajectory_pb.js";
import { models, readable, training } from "../api.js";
import { h } from "../dom.js";
import { apiBase, emptyState, formatNumber, plural, shortId, timeCell } from "../format.js";
import { listAll, mapPooled } from "../lists.js";
import { FieldError, numberField, readNumber } from "./fields.js";
import { readiness, type Readiness } from "./rl-readiness.js";

const MAX_BATCHES = 200;
const BATCHES_SHOWN = 20;
const MAX_GROUPS = 20_000;
const GROUP_PAGE = 500;
const DEFAULT_LEARNING_RATE = "5e-6";

export function rlForm(model: Model, signal: AbortSignal, onStarted: (jobId: string) => void): HTMLElement {
  const body = h("div", {}, h("p", { class: "muted" }, "Reading the logged trajectory batches…"));
  const section = h("section", { class: "train-step", "aria-labelledby": "train-rl-title" }, h("h2", { id: "train-rl-title" }, "3. Start an RL job from logged trajectories"), body);
  listAll((after) => models.listTrajectoryBatches({ modelId: model.id, limit: 100, after }, { signal }), MAX_BATCHES).then(
    ({ items }) => body.replaceChildren(...(items.length === 0 ? [noBatches(model)] : chooser(model, items, signal, onStarted))),
    (error: unknown) => {
      if (!signal.aborted) body.replaceChildren(h("p", { class: "form-message", role: "alert" }, `The trajectory batches could not be read: ${readable(error)}. Reload the page to try again.`));
    },
  );
  return section;
}

function noBatches(model: Model): HTMLElement {
  return emptyState(
    "No trajectory groups are logged for this model yet. Sample with logprobs, score the replies, and log them as groups; they appear here to train on:",
    `curl -X POST ${apiBase()}/preview/models/${model.id}/log \\\n  -H "Authorization: Bearer $SRL_API_KEY" -H "Content-Type: application/json" \\\n  -d '{"split": "train", "trajectory_groups": [{"trajectories": [\n        {"messages_and_choices": [{"role": "user", "content": "2+2?"}, <choice from /v1/chat/completions with logprobs>], "reward": 1},\n        {"messages_and_choices": [...], "reward": 0}]}]}'`,
  );
}

function chooser(model: Model, batches: TrajectoryBatch[], signal: AbortSignal, onStarted: (jobId: string) => void): HTMLElement[] {
  const shown = batches.slice(0, BATCHES_SHOWN);
  const means = new Map<string, HTMLElement>();
  const rows = shown.map((batch) => {
    const radio = h("input", { type: "radio", name: "rl-batch", value: batch.id, id: `rl-batch-${batch.id}` });
    const mean = h("td", { class: "num" }, "…");
    means.set(batch.id, mean);
    const source = batch.source === "training_job" ? h("span", {}, "input of job ", shortId(batch.trainingJobId ?? batch.id)) : "logged";
    return h(
      "tr",
      { "data-batch": batch.id },
      h("td", {}, radio, h("label", { for: radio.id, class: "batch-label" }, `${batch.split} at step ${batch.step}`)),
      h("td", { class: "num" }, formatNumber(batch.numGroups)),
      mean,
      h("td", { class: "wide-only" }, source),
      h("td", {}, timeCell(batch.createdAt)),
    );
  });
  const table = h(
    "table",
    { class: "batches-table" },
    h("caption", { class: "visually-hidden" }, "Trajectory batches of this model, newest first"),
    h("thead", {}, h("tr", {}, h("th", {}, "Batch (split, step)"), h("th", { class: "num" }, "Groups"), h("th", { class: "num" }, "Mean reward"), h("th", { class: "wide-only" }, "Source"), h("th", {}, "Logged"))),
    h("tbody", {}, ...rows),
  );
  void mapPooled(shown, 2, async (batch) => {
    const cell = means.get(batch.id);
    try {
      const page = await models.listTrajectoryGroups({ modelId: model.id, batchId: batch.id, limit: GROUP_PAGE }, { signal });
      const mean = readiness(page.data.map((g) => g.group ?? {})).meanReward;
      if (cell) cell.textContent = mean === null ? "—" : `${page.hasMore ? "≈ " : ""}${formatNumber(mean)}`;
      if (cell && page.hasMore) cell.title = `mean of the first ${GROUP_PAGE} groups`;
    } catch {
      if (cell) cell.textContent = "?";
    }
  });

  const summary = h("div", { class: "batch-summary", role: "status", "aria-live": "polite" }, h("p", { class: "muted" }, "Choose a batch to see what it can train."));
  const rate = numberField("rl-learning-rate", DEFAULT_LEARNING_RATE);
  const withoutLogprobs = h("input", { type: "checkbox", id: "rl-without-logprobs" });
  const message = h("p", { class: "form-message", role: "alert", hidden: "" });
  const submit = h("button", { type: "submit", disabled: "" }, "Start RL job");
  let groups: JsonObject[] = [];
  let chosen: Readiness | null = null;
  let loading: AbortController | null = null;
  // Replies without logprobs train only with allow_training_without_logprobs (ART skips them otherwise).
  const refreshSubmit = () => {
    submit.disabled = chosen === null || (withoutLogprobs.checked ? chosen.withOutput : chosen.withLogprobs) === 0;
  };
  withoutLogprobs.addEventListener("change", refreshSubmit);

  table.addEventListener("change", (event) => {
    const target = event.target;
    if (!(target instanceof HTMLInputElement) || target.name !== "rl-batch") return;
    const batch = batches.find((b) => b.id === target.value);
    if (!batch) return;
    loading?.abort();
    const mine = new AbortController();
    loading = mine;
    signal.addEventListener("abort", () => mine.abort(), { once: true });
    groups = [];
    chosen = null;
    refreshSubmit();
    message.hidden = true;
    summary.replaceChildren(h("p", {}, `Reading the ${plural(batch.numGroups, "group")} of this batch…`));
    listAll((after) => models.listTrajectoryGroups({ modelId: model.id, batchId: batch.id, limit: GROUP_PAGE, after }, { signal: mine.signal }), MAX_GROUPS).then(
      ({ items, truncated }) => {
        if (mine.signal.aborted) return;
        groups = items.map((stored) => stored.group ?? {});
        chosen = readiness(groups);
        summary.replaceChildren(...describe(chosen, truncated));
        refreshSubmit();
      },
      (error: unknown) => {
        if (!mine.signal.aborted) summary.replaceChildren(h("p", { class: "form-message" }, `This batch's groups could not be read: ${readable(error)}. Choose it again to retry.`));
      },
    );
  });

  const form = h(
    "form",
    { class: "train-form", novalidate: "" },
    h("div", { class: "train-field" }, h("label", { for: "rl-learning-rate" }, "Learning rate"), rate, h("span", { class: "muted hint" }, `default ${DEFAULT_LEARNING_RATE}`)),
    h("div", { class: "train-field checkbox-field" }, withoutLogprobs, h("label", { for: "rl-without-logprobs" }, "Also train replies that carry no logprobs"), h("span", { class: "muted hint" }, "allow_training_without_logprobs: no importance-sampling correction for them")),
    h("div", { class: "train-actions" }, submit),
    message,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    message.hidden = true;
    let request;
    try {
      const learningRate = rate.value.trim() === "" ? undefined : readNumber(rate, "Learning rate", { min: 0 });
      request = {
        modelId: model.id,
        trajectoryGroups: groups.map((group, index) => {
          try {
            return fromJson(TrajectoryGroupSchema, group, { ignoreUnknownFields: true });
          } catch (error) {
            throw new Error(`Group ${index} of this batch is not a trajectory group the API accepts (${error instanceof Error ? error.message : String(error)}). Log the groups again in the documented shape.`);
          }
        }),
        experimentalConfig: { learningRate, ...(withoutLogprobs.checked ? { allowTrainingWithoutLogprobs: true } : {}) },
      };
    } catch (error) {
      message.hidden = false;
      message.textContent = error instanceof Error ? error.message : String(error);
      if (error instanceof FieldError) error.input.focus();
      return;
    }
    submit.disabled = true;
    submit.textContent = "Starting…";
    training.createTrainingJob(request, { signal }).then(
      (job) => onStarted(job.id),
      (error: unknown) => {
        if (signal.aborted) return;
        submit.disabled = false;
        submit.textContent = "Start RL job";
        message.hidden = false;
        message.textContent = `The job was not started: ${readable(error)}. Choose another batch or change the settings, then start again.`;
      },
    );
  });
  const older = h("p", { class: "muted" }, `The newest ${BATCHES_SHOWN} of ${plural(batches.length, "batch", "batches")}; older ones are in the trajectory browser.`);
  return [h("div", { class: "table-scroll" }, table), ...(batches.length > BATCHES_SHOWN ? [older] : []), summary, form];
}

function describe(ready: Readiness, truncated: boolean): HTMLElement[] {
  const facts = h(
    "p",
    { class: "check-summary", "data-trainable": String(ready.withOutput) },
    `${plural(ready.groups, "group")}, ${plural(ready.trajectories, "trajectory", "trajectories")}, mean reward ${ready.meanReward === null ? "—" : formatNumber(ready.meanReward)}; `,
    `${formatNumber(ready.withLogprobs)} with sampled logprobs.`,
  );
  const notes: HTMLElement[] = [];
  if (truncated) notes.push(h("p", { class: "form-message" }, `Only the first ${formatNumber(MAX_GROUPS)} groups are sent from the page; send larger batches with the API.`));
  if (ready.withOutput === 0) {
    notes.push(
      h(
        "p",
        { class: "form-message" },
        "This batch cannot train: its trajectories hold no model replies (no Choice or assistant message in messages_and_choices), only rewards. Log trajectories that keep the conversation and the Choice your sampler returned (request it with logprobs: true), then choose that batch.",
      ),
    );
  } else if (ready.withLogprobs === 0) {
    notes.push(
      h(
        "p",
        { class: "form-message warning" },
        'No trajectory of this batch carries sampled logprobs (request them with logprobs: true and log the Choice as returned); the trainer skips such replies. Tick "Also train replies that carry no logprobs" to train them anyway.',
      ),
    );
  } else if (ready.withLogprobs < ready.withOutput) {
    notes.push(h("p", { class: "form-message warning" }, `${plural(ready.withOutput - ready.withLogprobs, "trajectory", "trajectories")} carry replies without logprobs; the trainer skips them unless "Also train replies that carry no logprobs" is ticked.`));
  }
  if (ready.flatGroups > 0 && ready.withOutput > 0) notes.push(h("p", { class: "muted" }, `${plural(ready.flatGroups, "group")} with one reward for every trajectory teach nothing (their advantage is 0).`));
  return [facts, ...notes];
}
