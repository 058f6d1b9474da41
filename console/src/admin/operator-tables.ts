// The operator state as facts and tables: database and engine counters, engine replicas, per
// base model load (KV cache use as a meter with its percentage in text) and per entity load.
import type { OperatorState } from "../../../gen/srl/v1/system_pb.js";
import { h } from "../dom.js";
import { emptyState, formatNumber, timeLong } from "../format.js";
import "./stacked-table.css";

function fact(term: string, value: Node | string, key: string): HTMLElement {
  return h("div", { class: "op-fact", "data-fact": key }, h("dt", {}, term), h("dd", {}, value));
}

function upText(up: boolean): HTMLElement {
  return h("span", { class: up ? "up" : "down" }, up ? "● up" : "✗ down");
}

/** A table whose cells are labelled by their column's header (for the stacked phone layout). */
function table(headers: string[], numeric: boolean[], rows: HTMLElement[], className: string): HTMLElement {
  for (const row of rows) [...row.children].forEach((cell, index) => cell.setAttribute("data-label", headers[index] ?? ""));
  return h(
    "div",
    { class: "table-scroll" },
    h("table", { class: `${className} stacked-table` }, h("thead", {}, h("tr", {}, ...headers.map((header, index) => h("th", { class: numeric[index] ? "num" : "" }, header)))), h("tbody", {}, ...rows)),
  );
}

const num = (value: number, key: string) => h("td", { class: "num", "data-col": key }, formatNumber(value));

export function operatorTables(state: OperatorState): HTMLElement[] {
  const ping = state.databasePingSeconds;
  const facts = h(
    "dl",
    { class: "op-facts" },
    fact("Database", h("span", {}, upText(state.databaseUp), ping === undefined ? "" : ` · ${formatNumber(Math.round(ping * 10_000) / 10)} ms`), "database"),
    fact("Engines up", `${state.engines.filter((engine) => engine.up).length} of ${state.engines.length}`, "engines-up"),
    fact("Engine starts", formatNumber(state.engineStarts), "engine-starts"),
    fact("Engine exits", formatNumber(state.engineExits), "engine-exits"),
    fact("Refused models", formatNumber(state.refusedModels), "refused-models"),
  );
  const engines =
    state.engines.length === 0
      ? emptyState("No engine is configured.")
      : table(
          ["Engine", "Replica", "State"],
          [false, false, false],
          state.engines.map((engine) => h("tr", { "data-engine": engine.replica || engine.engine }, h("td", {}, engine.engine), h("td", {}, engine.replica ? h("code", {}, engine.replica) : h("span", { class: "muted" }, "in process")), h("td", {}, upText(engine.up)))),
          "op-engines",
        );
  const loads =
    state.models.length === 0
      ? emptyState("No base model is loaded yet: an engine loads one on its first request.")
      : table(
          ["Base model", "Running", "Waiting", "KV cache", "Contexts", "Adapters loaded", "Replicas", "Sequences in use"],
          [false, true, true, false, true, true, true, true],
          state.models.map((load) =>
            h(
              "tr",
              { "data-model": load.modelName },
              h("td", {}, h("code", {}, load.modelName)),
              num(load.requestsRunning, "running"),
              num(load.requestsWaiting, "waiting"),
              h("td", { "data-col": "kv" }, kvMeter(load.kvCacheUsage)),
              num(load.contexts, "contexts"),
              num(load.loadedAdapters, "adapters"),
              num(load.replicas, "replicas"),
              h("td", { class: "num", "data-col": "sequences" }, `${formatNumber(load.sequencesInUse)} / ${formatNumber(load.sequencesTotal)}`),
            ),
          ),
          "op-models",
        );
  const entities =
    state.entities.length === 0
      ? emptyState("No entity has requests or training jobs.")
      : table(
          ["Entity", "Requests running", "Requests waiting", "Jobs queued", "Jobs running", "Jobs succeeded", "Jobs failed"],
          [false, true, true, true, true, true, true],
          state.entities.map((load) =>
            h(
              "tr",
              { "data-entity": load.entity },
              h("td", {}, load.entity),
              num(load.requestsRunning, "running"),
              num(load.requestsWaiting, "waiting"),
              num(load.jobsQueued, "jobs-queued"),
              num(load.jobsRunning, "jobs-running"),
              num(load.jobsSucceeded, "jobs-succeeded"),
              num(load.jobsFailed, "jobs-failed"),
            ),
          ),
          "op-entities",
        );
  return [
    h("p", { class: "muted op-read-at" }, `Read ${timeLong(state.readAt)}`),
    facts,
    h("h2", { class: "op-heading" }, "Engines"),
    engines,
    h("h2", { class: "op-heading" }, "Load per base model"),
    loads,
    h("h2", { class: "op-heading" }, "Load per entity"),
    entities,
  ];
}

function kvMeter(usage: number): HTMLElement {
  const percent = `${(usage * 100).toFixed(usage > 0 && usage < 0.01 ? 2 : 0)}%`;
  return h("span", { class: "op-kv" }, h("meter", { min: "0", max: "1", low: "0.7", high: "0.9", optimum: "0", value: String(usage), "aria-label": `KV cache ${percent} in use` }), percent);
}
