// What a metric says of one output.
import type { EvaluationItem } from "../../../gen/srl/v1/evaluations_pb.js";

export interface Verdict {
  passed: boolean;
  /** Why it failed; "" when it passed. */
  reason: string;
}

export interface Scorer {
  score(output: string, item: EvaluationItem): Verdict;
}

/** What a match that ran out of time reads as. */
export const TOO_LONG = "the pattern took too long";
