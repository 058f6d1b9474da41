// The trajectory browser: a model's stored batches (each /log call, each RL job's input) by split
// and step; a batch's groups with their reward spread, or its trajectories one by one, sorted and
// filtered by reward or text, each drawn as a chat. The choices live in the address (shareable).
import type { JsonObject } from "@bufbuild/protobuf";
import type { TrajectoryBatch } from "../../../gen/srl/v1/models_pb.js";
import { models, readable } from "../api.js";
import { h, showError, statusBadge } from "../dom.js";
import { apiBase, emptyState, formatNumber, plural, shortId, timeCell } from "../format.js";
import { trajectoryCard } from "../trajectories/chat.js";
import { contentText, isObject, listOf, meanAndStd, searchableText, summarize, type GroupSummary, type TrajectoryRow } from "../trajectories/shapes.js";
import { spreadStrip } from "../trajectories/spread.js";
import "../trajectories.css";
import { listAll } from "../lists.js";
import { crumbs, modelTitle } from "./links.js";
import { findModel } from "./run-data.js";
import type { ViewContext } from "../view.js";

const MAX_BATCHES = 1000;
const MAX_GROUPS = 5000;
const SHOWN_AT_ONCE = 40;

type Mode = "groups" | "trajectories";
type Sort = "reward-desc" | "reward-asc" | "spread-desc" | "position";

interface Filters {
  mode: Mode;
  sort: Sort;
  min: number | null;
  max: number | null;
  text: string;
}

export async function trajectoriesView(modelId: string, context: ViewContext): Promise<HTMLElement> {
  const page = h("div", { class: "trajectory-browser" });
  try {
    const [model, batches] = await Promise.all([findModel(modelId), loadBatches(modelId)]);
    const title = model ? modelTitle(model) : modelId;
    const heading = h("section", {}, crumbs(h("a", { href: `#/models/${modelId}` }, title), "trajectories"), h("h1", {}, `Trajectories of ${title}`));
    if (batches.length === 0) {
      page.append(
        heading,
        h(
          "section",
          {},
          emptyState(
            "No trajectories stored yet. Log some (they also train when sent to a training job):",
            `curl -X POST ${apiBase()}/preview/models/${modelId}/log \\\n  -H "Authorization: Bearer $SRL_API_KEY" -H "Content-Type: application/json" \\\n  -d '{"split":"val","trajectory_groups":[{"trajectories":[{"messages_and_choices":[{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"}],"reward":1}]}]}'`,
          ),
        ),
      );
      return page;
    }
    const body = h("div", {});
    page.append(heading, body);
    browse(modelId, batches, context, body);
  } catch (error) {
    showError(readable(error), error);
  }
  return page;
}

async function loadBatches(modelId: string): Promise<TrajectoryBatch[]> {
  return (await listAll((after) => models.listTrajectoryBatches({ modelId, limit: 100, after }), MAX_BATCHES)).items;
}

function browse(modelId: string, batches: TrajectoryBatch[], context: ViewContext, into: HTMLElement): void {
  const query = context.query;
  const splits = [...new Set(batches.map((b) => b.split))].sort();
  let split = query.get("split") ?? "";
  const filters: Filters = {
    mode: query.get("mode") === "trajectories" ? "trajectories" : "groups",
    sort: (["reward-desc", "reward-asc", "spread-desc", "position"] as const).find((s) => s === query.get("sort")) ?? "reward-desc",
    min: numberOrNull(query.get("min")),
    max: numberOrNull(query.get("max")),
    text: query.get("q") ?? "",
  };
  let batchId = query.get("batch") ?? "";
  let groups: GroupSummary[] = [];
  let truncated = false;
  let shown = SHOWN_AT_ONCE;

  const splitChips = h("div", { class: "chips", role: "group", "aria-label": "Split" });
  const batchSelect = h("select", { name: "batch", "aria-label": "Batch" });
  const mode = select("mode", "View", [["groups", "Groups"], ["trajectories", "Trajectories"]], filters.mode);
  const sort = select("sort", "Sort", [["reward-desc", "Reward, high first"], ["reward-asc", "Reward, low first"], ["spread-desc", "Spread, wide first"], ["position", "As sent"]], filters.sort);
  const min = h("input", { name: "min", type: "number", step: "any", placeholder: "min reward", "aria-label": "Minimum reward", value: filters.min === null ? "" : String(filters.min) });
  const max = h("input", { name: "max", type: "number", step: "any", placeholder: "max reward", "aria-label": "Maximum reward", value: filters.max === null ? "" : String(filters.max) });
  const text = h("input", { name: "q", type: "search", placeholder: "text in messages", "aria-label": "Search", value: filters.text });
  const batchFacts = h("div", { class: "batch-facts" });
  const summary = h("p", { class: "summary", "data-testid": "summary" });
  const results = h("div", { class: "results" });
  const more = h("button", { type: "button", class: "secondary", hidden: "" }, "Show more");

  const remember = () => {
    const params = new URLSearchParams();
    if (split) params.set("split", split);
    if (batchId) params.set("batch", batchId);
    if (filters.mode !== "groups") params.set("mode", filters.mode);
    if (filters.sort !== "reward-desc") params.set("sort", filters.sort);
    if (filters.min !== null) params.set("min", String(filters.min));
    if (filters.max !== null) params.set("max", String(filters.max));
    if (filters.text) params.set("q", filters.text);
    // replaceState: the address changes without a hashchange (no reload of the view).
    history.replaceState(null, "", `#/models/${modelId}/trajectories${params.size ? `?${params}` : ""}`);
  };

  const visibleBatches = () => batches.filter((b) => !split || b.split === split);

  const drawChips = () => {
    splitChips.replaceChildren(
      ...["", ...splits].map((name) => {
        const count = batches.filter((b) => !name || b.split === name).length;
        const chip = h("button", { type: "button", class: `chip-button${name === split ? " active" : ""}`, "data-split": name || "all", "aria-pressed": String(name === split) }, `${name || "all splits"} (${count})`);
        chip.addEventListener("click", () => {
          split = name;
          drawChips();
          drawBatchOptions();
          const first = visibleBatches()[0];
          if (first && !visibleBatches().some((b) => b.id === batchId)) void selectBatch(first.id);
          remember();
        });
        return chip;
      }),
    );
  };

  const drawBatchOptions = () => {
    batchSelect.replaceChildren(...visibleBatches().map((b) => h("option", { value: b.id, ...(b.id === batchId ? { selected: "" } : {}) }, batchLabel(b))));
  };

  const drawResults = () => {
    const rows = groups.flatMap((g) => g.rows);
    const keep = (row: TrajectoryRow) =>
      (filters.min === null || (row.reward ?? -Infinity) >= filters.min) &&
      (filters.max === null || (row.reward ?? Infinity) <= filters.max) &&
      (!filters.text || searchableText(row.trajectory).includes(filters.text.toLowerCase()));
    const kept = rows.filter(keep);
    const range = rewardRange(rows);
    const means = groups.flatMap((g) => (g.mean === null ? [] : [g.mean]));
    const rewards = rows.flatMap((r) => (r.reward === null ? [] : [r.reward]));
    const exceptions = groups.reduce((n, g) => n + g.exceptions.length, 0);
    summary.textContent = [
      `${plural(groups.length, "group")}, ${plural(rows.length, "trajectory", "trajectories")}${truncated ? ` (first ${MAX_GROUPS} groups)` : ""}`,
      rewards.length ? `mean reward ${formatNumber(meanAndStd(rewards).mean ?? 0)}` : "no rewards",
      means.length > 1 ? `spread of group means ${formatNumber(meanAndStd(means).std ?? 0)}` : null,
      exceptions ? plural(exceptions, "exception") : null,
      kept.length !== rows.length ? `${kept.length} match the filters` : null,
    ]
      .filter(Boolean)
      .join(" · ");
    let cards: HTMLElement[];
    if (filters.mode === "groups") {
      const visible = groups.map((g) => ({ ...g, rows: g.rows.filter(keep) })).filter((g) => g.rows.length > 0 || (!filters.text && filters.min === null && filters.max === null));
      cards = sortGroups(visible, filters.sort).map((g) => groupCard(g, range, filters.sort));
    } else {
      cards = sortRows(kept, filters.sort).map((row) => trajectoryDetails(row, false));
    }
    results.replaceChildren(...(cards.length ? cards.slice(0, shown) : [emptyState(rows.length ? "No trajectory matches these filters." : "This batch has no trajectories.")]));
    more.hidden = cards.length <= shown;
    more.textContent = `Show more (${cards.length - shown} left)`;
  };

  const selectBatch = async (id: string) => {
    batchId = id;
    shown = SHOWN_AT_ONCE;
    const batch = batches.find((b) => b.id === id);
    batchFacts.replaceChildren(batch ? batchDescription(batch) : "");
    results.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    summary.textContent = "";
    try {
      const loaded = await loadGroups(modelId, id);
      if (context.signal.aborted || batchId !== id) return;
      groups = loaded.groups.map(({ index, group }) => summarize(index, group));
      truncated = loaded.truncated;
      drawResults();
      showError(null);
    } catch (error) {
      showError(readable(error), error);
    }
  };

  batchSelect.addEventListener("change", () => {
    void selectBatch(batchSelect.value);
    remember();
  });
  const onFilter = () => {
    filters.mode = mode.value === "trajectories" ? "trajectories" : "groups";
    filters.sort = sort.value as Sort;
    filters.min = numberOrNull(min.value);
    filters.max = numberOrNull(max.value);
    filters.text = text.value.trim();
    shown = SHOWN_AT_ONCE;
    drawResults();
    remember();
  };
  for (const control of [mode, sort, min, max, text]) control.addEventListener("input", onFilter);
  more.addEventListener("click", () => {
    shown += SHOWN_AT_ONCE;
    drawResults();
  });

  if (split && !splits.includes(split)) split = "";
  if (!visibleBatches().some((b) => b.id === batchId)) batchId = visibleBatches()[0]?.id ?? batches[0]?.id ?? "";
  drawChips();
  drawBatchOptions();
  into.append(
    h("section", { class: "controls" }, splitChips, h("label", { class: "field wide" }, "Batch", batchSelect), batchFacts, h("div", { class: "filters" }, labelled("View", mode), labelled("Sort", sort), labelled("Reward ≥", min), labelled("Reward ≤", max), labelled("Text", text))),
    h("section", {}, summary, results, more),
  );
  void selectBatch(batchId);
}

async function loadGroups(modelId: string, batchId: string): Promise<{ groups: { index: number; group: JsonObject }[]; truncated: boolean }> {
  const { items, truncated } = await listAll((after) => models.listTrajectoryGroups({ modelId, batchId, limit: 500, after }), MAX_GROUPS);
  return { groups: items.map((g) => ({ index: g.index, group: g.group ?? {} })), truncated };
}

function batchLabel(batch: TrajectoryBatch): string {
  const when = new Date(batch.createdAt).toLocaleString("en", { dateStyle: "medium", timeStyle: "short" });
  const what = batch.source === "training_job" ? `trained by job ${batch.trainingJobId?.slice(0, 8)}${batch.producedStep !== undefined ? ` → step ${batch.producedStep}` : ""}` : "logged";
  return `${batch.split} · step ${batch.step} · ${what} · ${plural(batch.numGroups, "group")} · ${when}`;
}

function batchDescription(batch: TrajectoryBatch): HTMLElement {
  if (batch.source === "training_job" && batch.trainingJobId) {
    return h(
      "p",
      { class: "muted" },
      "The groups training job ",
      h("a", { href: `#/jobs/${batch.trainingJobId}` }, batch.trainingJobId.slice(0, 8)),
      " trained on, from step ",
      String(batch.step),
      batch.producedStep !== undefined ? ` to step ${batch.producedStep} ` : " ",
      statusBadge(batch.trainingJobStatus ?? "queued"),
      " · sent ",
      timeCell(batch.createdAt),
    );
  }
  return h("p", { class: "muted" }, `Logged to split "${batch.split}" at step ${batch.step}, `, timeCell(batch.createdAt), " · batch ", shortId(batch.id));
}

function groupCard(group: GroupSummary, range: [number, number], sort: Sort): HTMLElement {
  const stats = [
    plural(group.rows.length, "trajectory", "trajectories"),
    group.mean === null ? "no rewards" : `mean ${formatNumber(group.mean)}`,
    group.std === null ? null : `std ${formatNumber(group.std)}`,
    group.min === null || group.max === null ? null : `range ${formatNumber(group.min)} – ${formatNumber(group.max)}`,
    group.exceptions.length ? plural(group.exceptions.length, "exception") : null,
  ].filter(Boolean);
  const prompt = firstUserText(group.rows[0]?.trajectory);
  return h(
    "div",
    { class: "group-card", "data-group": String(group.index), "data-mean": group.mean === null ? "" : String(group.mean) },
    h("header", {}, h("strong", {}, `Group ${group.index + 1}`), h("span", { class: "muted" }, ` · ${stats.join(" · ")}`)),
    prompt ? h("p", { class: "prompt" }, prompt) : null,
    spreadStrip(group.rows.flatMap((r) => (r.reward === null ? [] : [r.reward])), range, group.mean),
    ...group.exceptions.map((e) => h("p", { class: "exception" }, `${typeof e.type === "string" ? e.type : "exception"}: ${typeof e.message === "string" ? e.message : ""}`)),
    ...sortRows(group.rows, sort === "spread-desc" ? "reward-desc" : sort).map((row) => trajectoryDetails(row, true)),
  );
}

function trajectoryDetails(row: TrajectoryRow, inGroup: boolean): HTMLElement {
  const label = inGroup ? `#${row.index + 1}` : `group ${row.groupIndex + 1} · #${row.index + 1}`;
  const reply = lastSampledText(row.trajectory);
  const details = h(
    "details",
    { class: "trajectory-row", "data-trajectory": `${row.groupIndex}:${row.index}` },
    h("summary", {}, rewardPill(row.reward), h("span", { class: "muted" }, ` ${label} `), h("span", { class: "preview" }, reply || "(no reply)")),
  );
  // Drawn when first opened: a batch can hold thousands of chats.
  details.addEventListener("toggle", () => {
    if (details.open && details.childElementCount === 1) details.append(trajectoryCard(row.trajectory, label));
  });
  return details;
}

/** A trajectory's reward in its row; read out as "reward 0.5" (the number alone says little). */
function rewardPill(reward: number | null): HTMLElement {
  if (reward === null) return h("span", { class: "reward-pill", title: "no reward", "data-reward": "" }, h("span", { class: "visually-hidden" }, "no reward"), h("span", { "aria-hidden": "true" }, "—"));
  return h("span", { class: "reward-pill", title: "reward", "data-reward": String(reward) }, h("span", { class: "visually-hidden" }, "reward "), formatNumber(reward));
}

function firstUserText(trajectory: JsonObject | undefined): string {
  const first = listOf(trajectory?.messages_and_choices).find((m) => isObject(m) && m.role === "user");
  return isObject(first) ? contentText(first.content).slice(0, 300) : "";
}

function lastSampledText(trajectory: JsonObject): string {
  const items = listOf(trajectory.messages_and_choices).filter(isObject);
  const last = [...items].reverse().find((m) => isObject(m.message) || m.role === "assistant");
  if (!last) return "";
  const message = isObject(last.message) ? last.message : last;
  const text = contentText(message.content);
  const calls = listOf(message.tool_calls).filter(isObject).map((c) => (isObject(c.function) && typeof c.function.name === "string" ? `${c.function.name}(…)` : "tool call"));
  return [text.replace(/\s+/g, " ").slice(0, 160), ...calls].filter(Boolean).join(" ");
}

function sortRows(rows: TrajectoryRow[], sort: Sort): TrajectoryRow[] {
  if (sort === "position") return rows;
  const sign = sort === "reward-asc" ? 1 : -1;
  return [...rows].sort((a, b) => sign * ((a.reward ?? -Infinity) - (b.reward ?? -Infinity)));
}

function sortGroups(groups: GroupSummary[], sort: Sort): GroupSummary[] {
  if (sort === "position") return groups;
  const key = (g: GroupSummary) => (sort === "spread-desc" ? (g.std ?? -Infinity) : (g.mean ?? -Infinity));
  const sign = sort === "reward-asc" ? 1 : -1;
  return [...groups].sort((a, b) => sign * (key(a) - key(b)) || a.index - b.index);
}

function rewardRange(rows: TrajectoryRow[]): [number, number] {
  const rewards = rows.flatMap((r) => (r.reward === null ? [] : [r.reward]));
  if (rewards.length === 0) return [0, 1];
  const [low, high] = [Math.min(...rewards), Math.max(...rewards)];
  return low === high ? [low - 0.5, high + 0.5] : [low, high];
}

function select(name: string, label: string, options: [string, string][], value: string): HTMLSelectElement {
  return h("select", { name, "aria-label": label }, ...options.map(([v, text]) => h("option", { value: v, ...(v === value ? { selected: "" } : {}) }, text)));
}

function labelled(text: string, control: HTMLElement): HTMLElement {
  return h("label", { class: "field" }, text, control);
}

function numberOrNull(text: string | null): number | null {
  if (text === null || text.trim() === "") return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

