import { describe, expect, it } from "vitest";
import { ECHO_ITEMS, ECHO_STRING_CHARS, ECHO_TOTAL_CHARS, clipJson, clipText, quoted } from "./clip.js";
import { toConnectError, validationError } from "./errors.js";
import { ValidationErrorSchema } from "../../gen/srl/v1/errors_pb.js";

describe("what errors echo", () => {
  it("cuts long strings and says how much was left out", () => {
    expect(clipText("short")).toBe("short");
    expect(clipText("x".repeat(ECHO_STRING_CHARS + 10))).toBe(`${"x".repeat(ECHO_STRING_CHARS)}…[10 more characters]`);
    expect(quoted("a".repeat(100), 4)).toBe('"aaaa…[96 more characters]"');
  });

  it("cuts lists, objects and depth, and summarises what is still too long", () => {
    const list = Array.from({ length: 100 }, (_, i) => i);
    expect(clipJson(list)).toEqual([...list.slice(0, ECHO_ITEMS), `…[${100 - ECHO_ITEMS} more items]`]);
    const deep = { a: { b: { c: { d: { e: { f: { g: 1 } } } } } } };
    expect(clipJson(deep)).toEqual({ a: { b: { c: { d: { e: { f: "<an object of 1 keys>" } } } } } });
    const wide = Object.fromEntries(Array.from({ length: ECHO_ITEMS }, (_, i) => [`k${i}`, "v".repeat(ECHO_STRING_CHARS)]));
    expect(clipJson(wide)).toBe(`<an object of ${ECHO_ITEMS} keys, too long to echo>`);
    expect(clipJson([Infinity, -Infinity])).toEqual(["Infinity", "-Infinity"]);
  });

  it("applies to every error on its way out: a 1 MiB input is echoed in a few hundred characters", () => {
    const huge = "n".repeat(2 ** 20);
    const error = toConnectError(validationError([{ type: "string_pattern_mismatch", loc: ["body", huge], msg: "bad", input: huge }]));
    expect(error.rawMessage.length).toBeLessThan(2_100);
    const [detail] = error.findDetails(ValidationErrorSchema);
    expect(JSON.stringify(detail).length).toBeLessThan(ECHO_TOTAL_CHARS);
  });
});
