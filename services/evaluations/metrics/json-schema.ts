// `json_schema`: the output, trimmed, parses as JSON (a single ```json fenced block is accepted
// too: chat models wrap JSON so) and is valid against the schema. The schema is compiled with ajv:
// draft 2020-12 unless its `$schema` names draft-07; nothing is fetched (a remote `$ref` does not
// compile) and validation runs under the same time limit as a regex (a schema has `pattern`s too).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import Ajv2020 from "ajv/dist/2020.js";
import type { EvaluationMetric } from "../../../gen/srl/v1/evaluations_pb.js";
import { badRequest } from "../../core/errors.js";
import { clipText } from "../../core/clip.js";
import type { MatchBudget } from "./bounded.js";
import { TOO_LONG, type Scorer } from "./verdict.js";

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;
const DRAFT_2020_12 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;
const FENCED = /^```(?:json)?[ \t]*\r?\n([\s\S]*?)\r?\n?```$/;

export function jsonSchemaScorer(metric: EvaluationMetric, budget: MatchBudget): Scorer {
  if (!metric.schema) throw badRequest("metric.schema is required for the json_schema metric");
  const validate = compile(metric.schema);
  return {
    score(output) {
      const parsed = parseOutput(output);
      if (!parsed.ok) return { passed: false, reason: parsed.reason };
      const result = budget.run(() => (validate(parsed.value) ? null : firstError(validate.errors)));
      if (!result.done) return { passed: false, reason: TOO_LONG };
      return result.value === null ? { passed: true, reason: "" } : { passed: false, reason: result.value };
    },
  };
}

/** A fresh ajv per evaluation: one shared instance would keep every tenant's schema in its cache. */
function compile(schema: JsonObject): ValidateFunction {
  const declared = schema.$schema;
  if (declared !== undefined && (typeof declared !== "string" || !(DRAFT_07.test(declared) || DRAFT_2020_12.test(declared)))) {
    throw badRequest(`metric.schema.$schema must be draft 2020-12 (https://json-schema.org/draft/2020-12/schema) or draft-07 (http://json-schema.org/draft-07/schema#), not ${JSON.stringify(declared)}`);
  }
  // strict: false accepts keywords ajv does not know (and unknown formats, which are not checked).
  const options = { strict: false, allErrors: false, logger: false as const };
  const ajv = typeof declared === "string" && DRAFT_07.test(declared) ? new Ajv(options) : new Ajv2020(options);
  try {
    return ajv.compile(schema);
  } catch (error) {
    throw badRequest(`metric.schema does not compile: ${clipText(error instanceof Error ? error.message : String(error), 500)}`);
  }
}

type Parsed = { ok: true; value: JsonValue } | { ok: false; reason: string };

function parseOutput(output: string): Parsed {
  const trimmed = output.trim();
  const text = FENCED.exec(trimmed)?.[1] ?? trimmed;
  try {
    return { ok: true, value: JSON.parse(text) as JsonValue };
  } catch (error) {
    return { ok: false, reason: `not JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
}

function firstError(errors: ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (!first) return "not valid against the schema";
  return `${first.instancePath || "/"} ${first.message ?? "is not valid"}`;
}
