// JSON Schema `format` values as GBNF for the string content (between the quotes). Each grammar
// accepts a subset of the format's valid strings (so outputs always pass a format validator such as
// ajv-formats' "full" mode), chosen to stay short and finite:
// - date: YYYY-MM-DD with each month's real day count; February stops at 28 (no leap-day logic).
// - time: HH:MM:SS, optional fraction of 1-9 digits, then "Z" or a ±HH:MM offset (a time zone is
//   always written; no leap second 60).
// - date-time: date "T" time.
// - uuid: 8-4-4-4-12 lowercase hex digits.
// - email: 1-3 dot-separated atoms of [A-Za-z0-9_+-] (1-16 characters each), "@", then 2-3
//   dot-separated lowercase DNS labels (1-16 characters of [a-z0-9-], not starting or ending with
//   "-"); at most about 100 characters, so a weak model cannot ramble on inside one.
// - ipv4: four decimal octets 0-255 without leading zeros.
import { GrammarBuilder } from "./gbnf.js";
import { integerRangePatterns } from "./numeric.js";

export const SUPPORTED_FORMATS = ["date", "time", "date-time", "uuid", "email", "ipv4"] as const;
export type SupportedFormat = (typeof SUPPORTED_FORMATS)[number];

export function isSupportedFormat(format: string): format is SupportedFormat {
  return (SUPPORTED_FORMATS as readonly string[]).includes(format);
}

/** A rule for the content of a string of this format. */
export function formatRule(b: GrammarBuilder, format: SupportedFormat): string {
  switch (format) {
    case "date": {
      const day31 = `("0" [1-9] | [12] [0-9] | "3" [01])`;
      const day30 = `("0" [1-9] | [12] [0-9] | "30")`;
      const day28 = `("0" [1-9] | "1" [0-9] | "2" [0-8])`;
      return b.define("date", `[0-9]{4} "-" (("0" [13578] | "1" [02]) "-" ${day31} | ("0" [469] | "11") "-" ${day30} | "02-" ${day28})`);
    }
    case "time": {
      const hour = `([01] [0-9] | "2" [0-3])`;
      return b.define("time", `${hour} ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ${hour} ":" [0-5] [0-9])`);
    }
    case "date-time":
      return b.define("date-time", `${formatRule(b, "date")} "T" ${formatRule(b, "time")}`);
    case "uuid":
      return b.define("uuid", `[0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}`);
    case "email": {
      const atom = b.define("email-atom", `[A-Za-z0-9_+-]{1,16}`);
      const label = b.define("email-label", `[a-z0-9] ([a-z0-9-]{0,14} [a-z0-9])?`);
      return b.define("email", `${atom} ("." ${atom}){0,2} "@" ${label} ("." ${label}){1,2}`);
    }
    case "ipv4": {
      const octet = b.define("ipv4-octet", integerRangePatterns(0n, 255n).map((p) => p.pattern).join(" | "));
      return b.define("ipv4", `${octet} "." ${octet} "." ${octet} "." ${octet}`);
    }
  }
}
