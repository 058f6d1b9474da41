// `regex`: the output contains a match of a JavaScript regular expression (searched, not anchored),
// matched under a time limit (bounded.ts).
import type { EvaluationMetric } from "../../../gen/srl/v1/evaluations_pb.js";
import { badRequest } from "../../core/errors.js";
import { clipText } from "../../core/clip.js";
import type { MatchBudget } from "./bounded.js";
import { TOO_LONG, type Scorer } from "./verdict.js";

/** `g` and `y` would make a RegExp stateful between outputs; `d` and `v` add nothing to a yes/no search. */
const ALLOWED_FLAGS = new Set(["i", "m", "s", "u"]);

export function regexScorer(metric: EvaluationMetric, budget: MatchBudget): Scorer {
  const pattern = metric.pattern ?? "";
  if (pattern === "") throw badRequest("metric.pattern is required for the regex metric");
  const flags = metric.flags ?? "";
  for (const [i, flag] of [...flags].entries()) {
    if (!ALLOWED_FLAGS.has(flag)) throw badRequest(`metric.flags may only hold i, m, s and u, not '${flag}'`);
    if (flags.indexOf(flag) !== i) throw badRequest(`metric.flags repeats '${flag}'`);
  }
  let regex: RegExp;
  try {
    regex = new RegExp(pattern, flags);
  } catch (error) {
    throw badRequest(`metric.pattern is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`);
  }
  const noMatch = `no match for /${clipText(pattern, 200)}/${flags}`;
  return {
    score(output) {
      const result = budget.run(() => regex.test(output));
      if (!result.done) return { passed: false, reason: TOO_LONG };
      return result.value ? { passed: true, reason: "" } : { passed: false, reason: noMatch };
    },
  };
}
