// A metric as a scorer of outputs: built once per evaluation (its pattern or schema compiled and
// checked before anything is generated), then asked about each output.
import type { EvaluationItem, EvaluationMetric } from "../../../gen/srl/v1/evaluations_pb.js";
import { badRequest } from "../../core/errors.js";
import { MatchBudget } from "./bounded.js";
import { exactMatchScorer } from "./exact-match.js";
import { jsonSchemaScorer } from "./json-schema.js";
import { regexScorer } from "./regex.js";
import type { Scorer } from "./verdict.js";

export { TOO_LONG, type Scorer, type Verdict } from "./verdict.js";

/** The metric's scorer, or a 400 naming what is wrong with the metric (or with an item it needs). */
export function scorerOf(metric: EvaluationMetric, items: readonly EvaluationItem[], budget = new MatchBudget()): Scorer {
  switch (metric.type) {
    case "exact_match":
      return exactMatchScorer(metric, items);
    case "regex":
      return regexScorer(metric, budget);
    case "json_schema":
      return jsonSchemaScorer(metric, budget);
    default:
      throw badRequest(`metric.type must be 'exact_match', 'regex' or 'json_schema', not '${metric.type}'`);
  }
}
