// `exact_match`: the output, trimmed, equals the item's `expected`, trimmed (optionally ignoring case).
import type { EvaluationItem, EvaluationMetric } from "../../../gen/srl/v1/evaluations_pb.js";
import { badRequest } from "../../core/errors.js";
import { clipText } from "../../core/clip.js";
import type { Scorer } from "./verdict.js";

export function exactMatchScorer(metric: EvaluationMetric, items: readonly EvaluationItem[]): Scorer {
  const missing = items.findIndex((item) => item.expected === undefined);
  if (missing >= 0) throw badRequest(`items[${missing}].expected is required: exact_match compares each output with its item's expected text`);
  const fold = metric.ignoreCase ? (text: string) => text.trim().toLowerCase() : (text: string) => text.trim();
  return {
    score(output, item) {
      const expected = item.expected ?? "";
      if (fold(output) === fold(expected)) return { passed: true, reason: "" };
      return { passed: false, reason: `expected '${clipText(expected.trim(), 200)}'` };
    },
  };
}
