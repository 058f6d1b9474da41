// The metric controls: exact match (optionally ignoring case), a regular expression with its
// flags, or a JSON schema. `read` checks the choice here (the pattern compiles, the schema is a
// JSON object) and returns the API's EvaluationMetric, or the problem in words.
import type { JsonObject } from "@bufbuild/protobuf";
import { h } from "../dom.js";

export interface MetricChoice {
  type: "exact_match" | "regex" | "json_schema";
  pattern?: string;
  flags?: string;
  schema?: JsonObject;
  ignoreCase?: boolean;
}

export interface MetricFields {
  element: HTMLElement;
  type(): MetricChoice["type"];
  read(): { metric: MetricChoice } | { problem: string };
}

const FLAGS: [string, string][] = [
  ["i", "ignore case"],
  ["m", "^ and $ match at line breaks"],
  ["s", ". matches newlines"],
  ["u", "unicode"],
];
const MAX_PATTERN = 500;
const EXAMPLE_SCHEMA = '{\n  "type": "object",\n  "required": ["answer"],\n  "properties": { "answer": { "type": "string" } }\n}';

export function metricFields(onChange: () => void): MetricFields {
  const select = h(
    "select",
    { name: "metric", id: "ev-metric" },
    h("option", { value: "exact_match" }, "Exact match"),
    h("option", { value: "regex" }, "Regular expression"),
    h("option", { value: "json_schema" }, "JSON schema"),
  );
  const ignoreCase = h("input", { type: "checkbox", name: "ignore_case" });
  const pattern = h("input", { type: "text", name: "pattern", id: "ev-pattern", maxlength: String(MAX_PATTERN), spellcheck: "false", autocomplete: "off", placeholder: "e.g. \\b(yes|no)\\b" });
  const flags = FLAGS.map(([flag]) => h("input", { type: "checkbox", name: `flag-${flag}`, value: flag }));
  const schema = h("textarea", { name: "schema", id: "ev-schema", rows: "6", spellcheck: "false" });
  schema.value = EXAMPLE_SCHEMA;

  const exactPart = h("div", { class: "ev-metric-part", "data-metric-part": "exact_match" }, h("label", { class: "ev-check" }, ignoreCase, "Ignore case"), h("p", { class: "muted" }, "Passes when the output, trimmed, equals the prompt's \"expected\", trimmed: every prompt needs one."));
  const regexPart = h(
    "div",
    { class: "ev-metric-part", "data-metric-part": "regex" },
    h("label", { for: "ev-pattern" }, "Pattern"),
    pattern,
    h("fieldset", { class: "ev-flags" }, h("legend", {}, "Flags"), ...flags.map((box, index) => h("label", { class: "ev-check" }, box, h("code", {}, FLAGS[index]?.[0] ?? ""), ` ${FLAGS[index]?.[1] ?? ""}`))),
    h("p", { class: "muted" }, "Passes when the output contains a match (a JavaScript regular expression)."),
  );
  const schemaPart = h("div", { class: "ev-metric-part", "data-metric-part": "json_schema" }, h("label", { for: "ev-schema" }, "JSON schema"), schema, h("p", { class: "muted" }, "Passes when the whole output is JSON valid against this schema (draft 2020-12 or 07)."));
  const parts = [exactPart, regexPart, schemaPart];
  const showPart = () => {
    for (const part of parts) part.hidden = part.dataset.metricPart !== select.value;
    onChange();
  };
  select.addEventListener("change", showPart);
  showPart();

  const type = () => select.value as MetricChoice["type"];
  return {
    element: h("fieldset", { class: "ev-metric" }, h("legend", {}, "Metric"), h("label", { for: "ev-metric" }, "Score each output by"), select, ...parts),
    type,
    read() {
      switch (type()) {
        case "exact_match":
          return { metric: { type: "exact_match", ignoreCase: ignoreCase.checked } };
        case "regex": {
          const flagText = flags.filter((box) => box.checked).map((box) => box.value).join("");
          if (pattern.value === "") return { problem: "Write the regular expression the outputs should match." };
          try {
            new RegExp(pattern.value, flagText);
          } catch (error) {
            return { problem: `The regular expression does not compile: ${error instanceof Error ? error.message : String(error)}` };
          }
          return { metric: { type: "regex", pattern: pattern.value, flags: flagText } };
        }
        case "json_schema": {
          let value: unknown;
          try {
            value = JSON.parse(schema.value);
          } catch (error) {
            return { problem: `The JSON schema is not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
          }
          if (typeof value !== "object" || value === null || Array.isArray(value)) return { problem: "The JSON schema must be a JSON object, like {\"type\": \"object\"}." };
          return { metric: { type: "json_schema", schema: value as JsonObject } };
        }
      }
    },
  };
}

/** The metric in words: "exact match (ignoring case)", "regex /\d+/i", "JSON schema". */
export function describeMetric(metric: { type: string; pattern?: string; flags?: string; ignoreCase?: boolean } | undefined): string {
  if (!metric) return "—";
  if (metric.type === "exact_match") return metric.ignoreCase ? "exact match, ignoring case" : "exact match";
  if (metric.type === "regex") return `regex /${metric.pattern ?? ""}/${metric.flags ?? ""}`;
  if (metric.type === "json_schema") return "JSON schema";
  return metric.type;
}
