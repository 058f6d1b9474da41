// A REST body's top-level keys that its message does not define. On messages that ask for it
// (`srl.v1.message` `refuse_unknown_fields`) each one is refused, naming it, unless the message lists
// it as accepted and ignored: a field the service does not act on is never dropped silently.
import type { DescMessage } from "@bufbuild/protobuf";
import type { Violation } from "../../core/errors.js";
import { plain } from "./json-decode.js";
import type { LosslessJson } from "./json-parse.js";
import { messageRule, restName } from "../validation/rules.js";

const knownCache = new WeakMap<DescMessage, { known: Set<string>; ignored: Set<string>; refused: Map<string, string> }>();

export function unknownFieldViolations(desc: DescMessage, body: { [key: string]: LosslessJson }, loc: (string | number)[]): Violation[] {
  const rule = messageRule(desc);
  if (!rule?.refuseUnknownFields) return [];
  let names = knownCache.get(desc);
  if (!names) {
    names = {
      known: new Set(desc.fields.map(restName)),
      ignored: new Set(rule.ignoredFields.map((f) => f.name)),
      refused: new Map(rule.refusedFields.map((f) => [f.name, f.reason])),
    };
    knownCache.set(desc, names);
  }
  const violations: Violation[] = [];
  for (const key of Object.keys(body)) {
    if (names.known.has(key) || names.ignored.has(key)) continue;
    const reason = names.refused.get(key);
    violations.push({
      type: reason === undefined ? "extra_forbidden" : "value_error",
      loc: [...loc, key],
      msg: reason === undefined ? "Unrecognized request argument supplied (not a field of this API; see the README's list of accepted fields)" : `Not supported: ${reason}`,
      input: plain(body[key] ?? null),
    });
  }
  return violations;
}
