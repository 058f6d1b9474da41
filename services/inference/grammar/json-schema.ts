// JSON Schema to GBNF, so llama.cpp enforces a structured output while sampling. Every string the
// grammar accepts is JSON that validates against the schema (with the stated exceptions); the
// grammar may accept fewer documents than the schema does (e.g. one property order, bounded
// whitespace, canonical escapes), never more. Anything this compiler cannot honour is refused with
// UnsupportedSchemaError, never silently dropped.
//
// Supported subset:
// - type (object, array, string, number, integer, boolean, null, or a list of them); without
//   `type`, the type is inferred from the keywords present (properties -> object, items -> array,
//   pattern -> string, minimum -> number, ...), and a schema with none of them (true, {}) is any value;
// - object: properties (written in the declared order; optional ones may be left out), required
//   (a required name without a property schema takes additionalProperties' schema),
//   additionalProperties (false / true / schema; additional keys come after the declared ones and
//   never repeat a declared name). When absent it allows any additional property (JSON Schema), or,
//   with disableAdditionalProperties, none for a schema that declares properties or required (vLLM's
//   meaning; a bare {"type": "object"} stays any object);
// - array: items (schema, or a list = tuple as in drafts before 2020-12, with additionalItems),
//   prefixItems, minItems / maxItems, uniqueItems false;
// - enum / const (alongside type, numeric bounds, length and pattern, which filter the values);
// - anyOf / oneOf as alternation (sibling keywords merged into each branch; oneOf's "exactly one"
//   is not enforced: branches that overlap can yield a value matching several);
// - allOf, merged into one schema (types intersected, properties merged with additionalProperties
//   honoured across members, bounds tightened, enums intersected); refused where the members
//   cannot be merged (two different patterns or formats, two prefixItems, anyOf in two members);
// - $ref to local JSON pointers (#, #/$defs/x, #/definitions/x, ...), recursion allowed except
//   left recursion (a cycle of references reached without consuming a character, e.g.
//   A = anyOf[B, ...], B = anyOf[A, ...]), which is refused;
// - string: minLength / maxLength (in code points), pattern (full match, see below), format (date,
//   time, date-time, uuid, email, ipv4; see formats.ts). pattern or format together with a length
//   bound is refused unless the pattern itself implies the bound;
// - number / integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers, or draft-4
//   booleans), exact; see numeric.ts for what is guaranteed (at most 15 digits, no exponent when
//   bounded);
// - ignored annotations: title, description, default, examples, $comment, $schema, $id, deprecated,
//   readOnly, writeOnly, contentMediaType, contentEncoding, $defs, definitions.
//
// `pattern` is matched against the whole string, as vLLM's guided decoding backends do; JSON
// Schema itself searches (an unanchored pattern may match a substring), so the grammar's strings
// are a subset of the valid ones. Characters are written in one canonical JSON encoding (see
// regex.ts), so the decoded string is what the regex accepted.
//
// Exceptions to "accepted implies valid": oneOf (above), and overlong UTF-8, which llama.cpp's
// grammar cannot tell from valid UTF-8 when a model writes single-byte tokens (see charset.ts; the
// sampler has to ban those lead bytes).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { CharSet, jsonCharGbnf } from "./charset.js";
import { formatRule, isSupportedFormat } from "./formats.js";
import { GrammarBuilder, alternatives, gbnfLiteral, ruleStem } from "./gbnf.js";
import { jsonCharRule, jsonValueRule, whitespaceRule, type WhitespaceOptions } from "./json-primitives.js";
import { compareDecimal, integerBounds, integerGbnf, numberGbnf, toDecimal, type Bound } from "./numeric.js";
import { UnsupportedRegexError, emitRegex, parseRegex, regexLengthBounds } from "./regex.js";

export type { JsonValue } from "@bufbuild/protobuf";

export interface JsonSchemaGbnfOptions extends WhitespaceOptions {
  /** Treat an absent additionalProperties as false (in schemas with properties or required). */
  disableAdditionalProperties?: boolean;
}

/** A schema keyword (or keyword value) this compiler does not honour, with its location. */
export class UnsupportedSchemaError extends Error {
  constructor(
    readonly keyword: string,
    readonly path: string,
    readonly detail?: string,
  ) {
    super(`unsupported JSON schema keyword ${JSON.stringify(keyword)} at ${path}${detail ? `: ${detail}` : ""}`);
    this.name = "UnsupportedSchemaError";
  }
}

/** A schema (or part of one) no value can satisfy. */
export class UnsatisfiableSchemaError extends UnsupportedSchemaError {
  constructor(keyword: string, path: string, detail: string) {
    super(keyword, path, detail);
    this.message = `JSON schema at ${path} can never be satisfied (${JSON.stringify(keyword)}: ${detail})`;
    this.name = "UnsatisfiableSchemaError";
  }
}

/** A complete GBNF grammar (rule `root`) for JSON documents valid against `schema`. */
export function jsonSchemaToGbnf(schema: JsonValue, options: JsonSchemaGbnfOptions = {}): string {
  return new SchemaCompiler(schema, options).compile();
}

/**
 * `schema` compiled into an existing builder, for grammars that embed JSON documents (structural
 * tags): returns the name of its rule (a fresh name from `hint`); helper rules share the builder.
 */
export function jsonSchemaRule(builder: GrammarBuilder, schema: JsonValue, options: JsonSchemaGbnfOptions = {}, hint = "json"): string {
  return new SchemaCompiler(schema, options, builder).compileInto(builder.reserve(hint));
}

const ANNOTATIONS = new Set([
  "title",
  "description",
  "default",
  "examples",
  "$comment",
  "$schema",
  "$id",
  "deprecated",
  "readOnly",
  "writeOnly",
  "contentMediaType",
  "contentEncoding",
  "$defs",
  "definitions",
]);

const SUPPORTED = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "minItems",
  "maxItems",
  "uniqueItems",
  "enum",
  "const",
  "anyOf",
  "oneOf",
  "allOf",
  "$ref",
  "pattern",
  "minLength",
  "maxLength",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
]);

const TYPES = ["object", "array", "string", "number", "integer", "boolean", "null"] as const;
type TypeName = (typeof TYPES)[number];

const TYPE_KEYWORDS: Record<string, TypeName> = {
  properties: "object",
  required: "object",
  additionalProperties: "object",
  items: "array",
  prefixItems: "array",
  additionalItems: "array",
  minItems: "array",
  maxItems: "array",
  uniqueItems: "array",
  pattern: "string",
  minLength: "string",
  maxLength: "string",
  format: "string",
  minimum: "number",
  maximum: "number",
  exclusiveMinimum: "number",
  exclusiveMaximum: "number",
};

/** Keywords that may stand beside enum / const (they filter the listed values). */
const ENUM_FILTERS = new Set(["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern"]);

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Schema keywords that constrain (everything but annotations). */
function constraints(s: JsonObject): string[] {
  return Object.keys(s).filter((k) => !ANNOTATIONS.has(k));
}

function without(s: JsonObject, ...keys: string[]): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(s)) if (!keys.includes(k)) out[k] = v;
  return out;
}

/** Deterministic JSON text (sorted keys), for comparing values. */
function canonical(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k] as JsonValue)}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

function ruleHint(path: string, suffix: string): string {
  const skip = new Set(["#", "properties", "items", "prefixItems", "$defs", "definitions", "anyOf", "oneOf", "allOf", "additionalProperties", "additionalItems"]);
  const segments = path.split("/").filter((s) => !skip.has(s));
  const tail = segments.slice(-2).join("-");
  return ruleStem(tail ? `${tail}-${suffix}` : suffix);
}

class SchemaCompiler {
  private wsSymbol: string | null = null;
  private readonly refRules = new Map<string, string>();
  /** Reference -> references reachable from the start of its schema without consuming input. */
  private readonly headEdges = new Map<string, Set<string>>();
  private readonly refPaths = new Map<string, string>();
  private readonly inlining: string[] = [];

  constructor(
    private readonly root: JsonValue,
    private readonly options: JsonSchemaGbnfOptions,
    private readonly b: GrammarBuilder = new GrammarBuilder(),
  ) {}

  compile(): string {
    return this.b.render(this.compileInto(this.b.reserveExact("root")));
  }

  /** Sets the body of the reserved rule `name` to the schema (its `#`). */
  compileInto(name: string): string {
    if (this.options.whitespacePattern !== undefined && !this.options.disableAnyWhitespace) {
      try {
        parseRegex(this.options.whitespacePattern);
      } catch (err) {
        if (err instanceof UnsupportedRegexError) throw new UnsupportedSchemaError("whitespacePattern", "(options)", err.message);
        throw err;
      }
    }
    this.refRules.set("#", name);
    this.b.set(name, this.body(this.root, "#", "#"));
    this.checkLeftRecursion();
    return name;
  }

  /** The whitespace symbol between tokens ("" for none), created on first use. */
  private get ws(): string {
    this.wsSymbol ??= whitespaceRule(this.b, this.options);
    return this.wsSymbol;
  }

  // ---- structure ----------------------------------------------------------------------------

  /** `schema` as one GBNF symbol. */
  private value(schema: JsonValue, path: string, owner: string | null, hint: string): string {
    return this.b.symbol(ruleHint(path, hint), this.body(schema, path, owner));
  }

  /**
   * A GBNF expression for `schema`. `owner` is the reference whose schema starts at this point
   * with nothing consumed yet (for the left-recursion check), null once input has been consumed.
   */
  private body(schema: JsonValue, path: string, owner: string | null): string {
    if (schema === true) return jsonValueRule(this.b, this.ws);
    if (schema === false) throw new UnsatisfiableSchemaError("false", path, "the schema false matches nothing");
    if (!isObject(schema)) throw new UnsupportedSchemaError(typeof schema, path, "a schema must be an object or a boolean");
    this.checkKeywords(schema, path);

    if ("$ref" in schema) {
      const rest = without(schema, "$ref");
      if (constraints(rest).length === 0) return this.refSymbol(schema.$ref, path, owner);
      return this.body(this.merge([schema], path), path, owner);
    }
    if ("allOf" in schema) return this.body(this.merge([schema], path), path, owner);
    if ("anyOf" in schema || "oneOf" in schema) return this.alternation(schema, path, owner);
    if ("enum" in schema || "const" in schema) return this.enumeration(schema, path);

    const types = this.types(schema, path);
    if (types.length === TYPES.length && constraints(schema).length === 0) return jsonValueRule(this.b, this.ws);
    const options: { type: TypeName; expr: string }[] = [];
    let firstError: UnsatisfiableSchemaError | null = null;
    for (const type of types) {
      try {
        options.push({ type, expr: this.typed(type, schema, path) });
      } catch (err) {
        if (!(err instanceof UnsatisfiableSchemaError)) throw err;
        firstError ??= err;
      }
    }
    if (options.length === 0) throw firstError ?? new UnsatisfiableSchemaError("type", path, "no type can be satisfied");
    return alternatives(options.map(({ type, expr }) => (options.length > 1 ? this.b.symbol(ruleHint(path, type), expr) : expr)));
  }

  private checkKeywords(schema: JsonObject, path: string): void {
    for (const key of Object.keys(schema)) {
      if (ANNOTATIONS.has(key)) continue;
      if (!SUPPORTED.has(key)) throw new UnsupportedSchemaError(key, path);
      if (key === "uniqueItems" && schema[key] !== false) throw new UnsupportedSchemaError(key, path, "only false is supported");
    }
  }

  private types(schema: JsonObject, path: string): TypeName[] {
    const declared = schema.type;
    let types: TypeName[];
    if (declared !== undefined) {
      const list = Array.isArray(declared) ? declared : [declared];
      if (list.length === 0) throw new UnsupportedSchemaError("type", path, "an empty type list");
      types = list.map((t) => {
        if (typeof t !== "string" || !(TYPES as readonly string[]).includes(t)) throw new UnsupportedSchemaError("type", path, `unknown type ${JSON.stringify(t)}`);
        return t as TypeName;
      });
    } else {
      const inferred = new Set<TypeName>();
      for (const key of Object.keys(schema)) {
        const t = TYPE_KEYWORDS[key];
        if (t) inferred.add(t);
      }
      types = inferred.size > 0 ? [...inferred] : [...TYPES];
    }
    if (types.includes("number")) types = types.filter((t) => t !== "integer");
    return [...new Set(types)];
  }

  private typed(type: TypeName, s: JsonObject, path: string): string {
    switch (type) {
      case "null":
        return this.b.define("null", '"null"');
      case "boolean":
        return this.b.define("boolean", '"true" | "false"');
      case "integer":
      case "number":
        return this.number(type, s, path);
      case "string":
        return this.string(s, path);
      case "array":
        return this.array(s, path);
      case "object":
        return this.object(s, path);
    }
  }

  // ---- references ---------------------------------------------------------------------------

  private resolve(ref: JsonValue | undefined, path: string): { pointer: string; target: JsonValue } {
    if (typeof ref !== "string") throw new UnsupportedSchemaError("$ref", path, "must be a string");
    if (!ref.startsWith("#")) throw new UnsupportedSchemaError("$ref", path, `only local references (#...) are supported, not ${JSON.stringify(ref)}`);
    let pointer: string;
    try {
      pointer = decodeURIComponent(ref.slice(1));
    } catch {
      throw new UnsupportedSchemaError("$ref", path, `malformed reference ${JSON.stringify(ref)}`);
    }
    if (pointer !== "" && !pointer.startsWith("/")) throw new UnsupportedSchemaError("$ref", path, `anchors are not supported (${JSON.stringify(ref)})`);
    let target: JsonValue | undefined = this.root;
    const segments = pointer === "" ? [] : pointer.slice(1).split("/");
    for (const raw of segments) {
      const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      if (Array.isArray(target)) target = target[Number(segment)];
      else if (isObject(target)) target = Object.hasOwn(target, segment) ? target[segment] : undefined;
      else target = undefined;
      if (target === undefined) throw new UnsupportedSchemaError("$ref", path, `cannot resolve ${JSON.stringify(ref)}`);
    }
    return { pointer: `#${segments.map((s) => `/${escapePointer(s.replace(/~1/g, "/").replace(/~0/g, "~"))}`).join("")}`, target };
  }

  private refSymbol(ref: JsonValue | undefined, path: string, owner: string | null): string {
    const { pointer, target } = this.resolve(ref, path);
    if (owner !== null) {
      const edges = this.headEdges.get(owner) ?? new Set<string>();
      edges.add(pointer);
      this.headEdges.set(owner, edges);
    }
    this.refPaths.set(pointer, this.refPaths.get(pointer) ?? path);
    const existing = this.refRules.get(pointer);
    if (existing) return existing;
    const name = this.b.reserve(ruleHint(pointer, "ref"));
    this.refRules.set(pointer, name);
    this.b.set(name, this.body(target, pointer, pointer));
    return name;
  }

  private checkLeftRecursion(): void {
    const state = new Map<string, "visiting" | "done">();
    const visit = (node: string, trail: string[]) => {
      if (state.get(node) === "done") return;
      if (state.get(node) === "visiting") {
        const cycle = [...trail.slice(trail.indexOf(node)), node].join(" -> ");
        throw new UnsupportedSchemaError("$ref", this.refPaths.get(node) ?? node, `left-recursive references (${cycle}) never consume input`);
      }
      state.set(node, "visiting");
      for (const next of this.headEdges.get(node) ?? []) visit(next, [...trail, node]);
      state.set(node, "done");
    };
    for (const node of this.headEdges.keys()) visit(node, []);
  }

  // ---- anyOf / oneOf / allOf ----------------------------------------------------------------

  private alternation(schema: JsonObject, path: string, owner: string | null): string {
    if ("anyOf" in schema && "oneOf" in schema) throw new UnsupportedSchemaError("oneOf", path, "together with anyOf");
    const key = "anyOf" in schema ? "anyOf" : "oneOf";
    const branches = schema[key];
    if (!Array.isArray(branches) || branches.length === 0) throw new UnsupportedSchemaError(key, path, "must be a non-empty array");
    const siblings = without(schema, key);
    const options: string[] = [];
    let firstError: UnsatisfiableSchemaError | null = null;
    branches.forEach((branch, i) => {
      const branchPath = `${path}/${key}/${i}`;
      try {
        const combined = constraints(siblings).length === 0 ? branch : this.merge([siblings, branch], branchPath);
        options.push(this.value(combined, branchPath, owner, "alt"));
      } catch (err) {
        if (!(err instanceof UnsatisfiableSchemaError)) throw err;
        firstError ??= err;
      }
    });
    if (options.length === 0) throw firstError ?? new UnsatisfiableSchemaError(key, path, "no branch can be satisfied");
    return alternatives(options);
  }

  /** allOf / $ref-with-siblings / anyOf-with-siblings: one schema equivalent to all of `schemas`. */
  private merge(schemas: JsonValue[], path: string): JsonObject {
    let merged: JsonObject = {};
    for (const s of schemas) merged = this.mergeTwo(merged, this.flatten(s, path), path);
    return merged;
  }

  /** The schema with its own $ref and allOf merged in (no $ref / allOf left at the top). */
  private flatten(schema: JsonValue, path: string): JsonObject {
    if (schema === true) return {};
    if (schema === false) throw new UnsatisfiableSchemaError("false", path, "the schema false matches nothing");
    if (!isObject(schema)) throw new UnsupportedSchemaError(typeof schema, path, "a schema must be an object or a boolean");
    this.checkKeywords(schema, path);
    let out = without(schema, "$ref", "allOf");
    if ("$ref" in schema) {
      const { pointer, target } = this.resolve(schema.$ref, path);
      if (this.inlining.includes(pointer)) throw new UnsupportedSchemaError("$ref", path, `recursive reference ${pointer} inside allOf (or beside other keywords) cannot be merged`);
      this.inlining.push(pointer);
      try {
        out = this.mergeTwo(this.flatten(target, pointer), out, path);
      } finally {
        this.inlining.pop();
      }
    }
    if ("allOf" in schema) {
      const members = schema.allOf;
      if (!Array.isArray(members) || members.length === 0) throw new UnsupportedSchemaError("allOf", path, "must be a non-empty array");
      members.forEach((m, i) => {
        out = this.mergeTwo(out, this.flatten(m, `${path}/allOf/${i}`), `${path}/allOf/${i}`);
      });
    }
    return out;
  }

  /**
   * additionalProperties, or false when absent under disableAdditionalProperties for a schema that
   * declares its properties (`properties`, or when compiling an object, `required`; a bare
   * {"required": [...]} merged from an anyOf branch or allOf member must not forbid the others).
   */
  private effectiveAdditional(s: JsonObject, requiredDeclares: boolean): JsonValue | undefined {
    if ("additionalProperties" in s) return s.additionalProperties;
    if (this.options.disableAdditionalProperties && ("properties" in s || (requiredDeclares && "required" in s))) return false;
    return undefined;
  }

  private mergeTwo(a: JsonObject, b: JsonObject, path: string): JsonObject {
    const out: JsonObject = { ...a };
    for (const [key, value] of Object.entries(b)) {
      if (ANNOTATIONS.has(key)) continue;
      if (key === "properties" || key === "additionalProperties") continue;
      const mine = out[key];
      if (mine === undefined) {
        out[key] = value;
        continue;
      }
      switch (key) {
        case "type": {
          const list = (v: JsonValue) => (Array.isArray(v) ? v : [v]).map(String);
          const left = list(mine);
          const right = list(value);
          const both = new Set<string>();
          for (const t of left) {
            if (right.includes(t)) both.add(t);
            else if (t === "integer" && right.includes("number")) both.add("integer");
            else if (t === "number" && right.includes("integer")) both.add("integer");
          }
          if (both.size === 0) throw new UnsatisfiableSchemaError("type", path, `no common type in ${JSON.stringify(mine)} and ${JSON.stringify(value)}`);
          out.type = [...both];
          break;
        }
        case "required":
          out.required = [...new Set([...(Array.isArray(mine) ? mine : []), ...(Array.isArray(value) ? value : [])])];
          break;
        case "minimum":
        case "minLength":
        case "minItems":
        case "exclusiveMinimum":
        case "maximum":
        case "maxLength":
        case "maxItems":
        case "exclusiveMaximum": {
          if (typeof mine !== "number" || typeof value !== "number") throw new UnsupportedSchemaError(key, path, "cannot merge non-numeric values in allOf");
          out[key] = key.startsWith("min") || key === "exclusiveMinimum" ? Math.max(mine, value) : Math.min(mine, value);
          break;
        }
        case "enum": {
          if (!Array.isArray(mine) || !Array.isArray(value)) throw new UnsupportedSchemaError("enum", path, "must be an array");
          const keep = new Set(value.map(canonical));
          out.enum = mine.filter((v) => keep.has(canonical(v)));
          break;
        }
        case "items":
          if (Array.isArray(mine) || Array.isArray(value)) throw new UnsupportedSchemaError("items", path, "tuple items cannot be merged in allOf");
          out.items = this.merge([mine, value], `${path}/items`);
          break;
        case "uniqueItems":
          out.uniqueItems = mine === true || value === true;
          break;
        default:
          if (canonical(mine) !== canonical(value)) {
            if (key === "const") throw new UnsatisfiableSchemaError("const", path, "two different constants");
            throw new UnsupportedSchemaError(key, path, "different values cannot be merged in allOf");
          }
      }
    }
    if (("anyOf" in a || "oneOf" in a) && ("anyOf" in b || "oneOf" in b)) throw new UnsupportedSchemaError("anyOf" in b ? "anyOf" : "oneOf", path, "alternatives in more than one merged schema");

    // properties and additionalProperties, each side's additionalProperties applying to the other's extra names.
    if ("properties" in a || "properties" in b || "additionalProperties" in a || "additionalProperties" in b) {
      const pa = isObject(a.properties) ? a.properties : {};
      const pb = isObject(b.properties) ? b.properties : {};
      const addA = this.effectiveAdditional(a, false);
      const addB = this.effectiveAdditional(b, false);
      const properties: JsonObject = {};
      for (const key of new Set([...Object.keys(pa), ...Object.keys(pb)])) {
        const left: JsonValue = Object.hasOwn(pa, key) ? (pa[key] as JsonValue) : (addA ?? true);
        const right: JsonValue = Object.hasOwn(pb, key) ? (pb[key] as JsonValue) : (addB ?? true);
        properties[key] = left === false || right === false ? false : left === true ? right : right === true ? left : this.merge([left, right], `${path}/properties/${escapePointer(key)}`);
      }
      out.properties = properties;
      let additional: JsonValue | undefined;
      if (addA === false || addB === false) additional = false;
      else if (isObject(addA) && isObject(addB)) additional = this.merge([addA, addB], `${path}/additionalProperties`);
      else if (isObject(addA)) additional = addA;
      else if (isObject(addB)) additional = addB;
      else if (addA === true || addB === true) additional = true;
      if (additional === undefined) delete out.additionalProperties;
      else out.additionalProperties = additional;
    }
    return out;
  }

  // ---- enum / const -------------------------------------------------------------------------

  private enumeration(s: JsonObject, path: string): string {
    for (const key of constraints(s)) {
      if (key !== "enum" && key !== "const" && !ENUM_FILTERS.has(key)) throw new UnsupportedSchemaError(key, path, "together with enum/const");
    }
    let values: JsonValue[];
    if ("enum" in s) {
      if (!Array.isArray(s.enum)) throw new UnsupportedSchemaError("enum", path, "must be an array");
      values = s.enum;
      if ("const" in s) values = values.filter((v) => canonical(v) === canonical(s.const as JsonValue));
    } else values = [s.const as JsonValue];
    const types = "type" in s ? this.types(s, path) : null;
    const bounds = this.numericBounds(s, path);
    const minLength = this.count(s, "minLength", path);
    const maxLength = this.count(s, "maxLength", path);
    let regex: RegExp | null = null;
    if (typeof s.pattern === "string") {
      try {
        regex = new RegExp(s.pattern, "u");
      } catch (err) {
        throw new UnsupportedSchemaError("pattern", path, (err as Error).message);
      }
    }
    const accepted = values.filter((v) => {
      if (types && !types.some((t) => hasType(v, t))) return false;
      if (typeof v === "number") {
        const d = toDecimal(v);
        if (bounds.lower && (compareDecimal(d, bounds.lower.value) < 0 || (bounds.lower.exclusive && compareDecimal(d, bounds.lower.value) === 0))) return false;
        if (bounds.upper && (compareDecimal(d, bounds.upper.value) > 0 || (bounds.upper.exclusive && compareDecimal(d, bounds.upper.value) === 0))) return false;
      }
      if (typeof v === "string") {
        const length = [...v].length;
        if (minLength !== null && length < minLength) return false;
        if (maxLength !== null && length > maxLength) return false;
        if (regex && !regex.test(v)) return false;
      }
      return true;
    });
    if (accepted.length === 0) throw new UnsatisfiableSchemaError("enum" in s ? "enum" : "const", path, "no listed value satisfies the schema");
    return alternatives(accepted.map((v) => gbnfLiteral(JSON.stringify(v))));
  }

  // ---- numbers ------------------------------------------------------------------------------

  private numericBounds(s: JsonObject, path: string): { lower: Bound | null; upper: Bound | null } {
    const read = (key: string): number | null => {
      const v = s[key];
      if (v === undefined || typeof v === "boolean") return null;
      if (typeof v !== "number" || !Number.isFinite(v)) throw new UnsupportedSchemaError(key, path, "must be a finite number");
      return v;
    };
    const pick = (inclusiveKey: string, exclusiveKey: string, stricter: (a: number, b: number) => boolean): Bound | null => {
      let inclusive = read(inclusiveKey);
      let exclusive = read(exclusiveKey);
      if (s[exclusiveKey] === true) {
        // draft 4: exclusiveMinimum: true makes minimum exclusive
        exclusive = inclusive;
        inclusive = null;
      }
      if (inclusive === null && exclusive === null) return null;
      if (exclusive === null) return { value: toDecimal(inclusive as number), exclusive: false };
      if (inclusive === null || stricter(exclusive, inclusive) || exclusive === inclusive) return { value: toDecimal(exclusive), exclusive: true };
      return { value: toDecimal(inclusive), exclusive: false };
    };
    return {
      lower: pick("minimum", "exclusiveMinimum", (a, b) => a > b),
      upper: pick("maximum", "exclusiveMaximum", (a, b) => a < b),
    };
  }

  private number(type: "integer" | "number", s: JsonObject, path: string): string {
    const { lower, upper } = this.numericBounds(s, path);
    if (type === "integer") {
      const { lo, hi } = integerBounds(lower, upper);
      const expr = integerGbnf(lo, hi);
      if (expr === null) throw new UnsatisfiableSchemaError(lower ? "minimum" : "maximum", path, "no integer within the bounds (and |x| < 10^15)");
      return this.b.define(ruleHint(path, "int"), expr);
    }
    const expr = numberGbnf(lower, upper);
    if (expr === null) throw new UnsatisfiableSchemaError(lower ? "minimum" : "maximum", path, "no number within the bounds (and |x| < 10^15)");
    return this.b.define(ruleHint(path, "num"), expr);
  }

  // ---- strings ------------------------------------------------------------------------------

  private count(s: JsonObject, key: string, path: string): number | null {
    const v = s[key];
    if (v === undefined) return null;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new UnsupportedSchemaError(key, path, "must be a non-negative integer");
    return v;
  }

  private string(s: JsonObject, path: string): string {
    const minLength = this.count(s, "minLength", path);
    const maxLength = this.count(s, "maxLength", path);
    if (minLength !== null && maxLength !== null && minLength > maxLength) throw new UnsatisfiableSchemaError("minLength", path, "minLength > maxLength");
    const quote = '"\\""';
    let content: string;
    if ("format" in s) {
      const format = s.format;
      if (typeof format !== "string" || !isSupportedFormat(format)) throw new UnsupportedSchemaError("format", path, `format ${JSON.stringify(format)} is not supported`);
      if ("pattern" in s || minLength !== null || maxLength !== null) throw new UnsupportedSchemaError("format", path, "together with pattern, minLength or maxLength");
      content = formatRule(this.b, format);
    } else if ("pattern" in s) {
      if (typeof s.pattern !== "string") throw new UnsupportedSchemaError("pattern", path, "must be a string");
      let node;
      try {
        node = parseRegex(s.pattern);
      } catch (err) {
        if (err instanceof UnsupportedRegexError) throw new UnsupportedSchemaError("pattern", path, err.message);
        throw err;
      }
      const length = regexLengthBounds(node);
      if (minLength !== null && length.min < minLength) throw new UnsupportedSchemaError("minLength", path, "together with a pattern that does not imply it");
      if (maxLength !== null && (length.max === null || length.max > maxLength)) throw new UnsupportedSchemaError("maxLength", path, "together with a pattern that does not imply it");
      const hint = ruleHint(path, "pattern");
      const name = this.b.reserve(hint);
      this.b.set(name, emitRegex(node, this.b, name, "json-string"));
      content = name;
    } else {
      content = this.b.repeat(jsonCharRule(this.b), minLength ?? 0, maxLength, ruleHint(path, "chars"));
    }
    return this.b.define(ruleHint(path, "str"), `${quote} ${content === '""' ? "" : `${content} `}${quote}`);
  }

  // ---- arrays -------------------------------------------------------------------------------

  private array(s: JsonObject, path: string): string {
    const ws = this.ws;
    const join = (...items: string[]) => items.filter((i) => i !== "" && i !== '""').join(" ") || '""';
    let prefix: JsonValue[] = [];
    let rest: JsonValue | null;
    let restPath = `${path}/items`;
    if ("prefixItems" in s) {
      if (!Array.isArray(s.prefixItems)) throw new UnsupportedSchemaError("prefixItems", path, "must be an array");
      if (Array.isArray(s.items)) throw new UnsupportedSchemaError("items", path, "an array beside prefixItems");
      if ("additionalItems" in s) throw new UnsupportedSchemaError("additionalItems", path, "beside prefixItems (use items)");
      prefix = s.prefixItems;
      rest = "items" in s ? (s.items as JsonValue) : true;
    } else if (Array.isArray(s.items)) {
      prefix = s.items;
      rest = "additionalItems" in s ? (s.additionalItems as JsonValue) : true;
      restPath = `${path}/additionalItems`;
    } else {
      if ("additionalItems" in s && !("items" in s)) throw new UnsupportedSchemaError("additionalItems", path, "without tuple items");
      rest = "items" in s ? (s.items as JsonValue) : true;
    }
    if (rest === false) rest = null;
    const prefixPath = "prefixItems" in s ? `${path}/prefixItems` : `${path}/items`;
    const min = this.count(s, "minItems", path) ?? 0;
    let max = this.count(s, "maxItems", path);
    if (rest === null) max = max === null ? prefix.length : Math.min(max, prefix.length);
    const forbidden = prefix.findIndex((p) => p === false);
    if (forbidden >= 0) max = max === null ? forbidden : Math.min(max, forbidden);
    if (max !== null && min > max) throw new UnsatisfiableSchemaError("minItems", path, `needs ${min} items but at most ${max} are allowed`);

    const k = max === null ? prefix.length : Math.min(prefix.length, max);
    const sep = join(ws, '","', ws);
    const element = (j: number) => this.value(prefix[j] as JsonValue, `${prefixPath}/${j}`, null, "item");
    const restSymbol = rest !== null && (max === null || max > k) ? this.value(rest, restPath, null, "item") : null;
    const restMin = Math.max(0, min - k);
    const restMax = max === null ? null : max - k;
    const sepRest = restSymbol ? this.b.define(ruleHint(path, "next"), join(sep, restSymbol)) : null;

    let nonEmpty: string | null;
    if (k === 0) {
      nonEmpty = restSymbol && sepRest ? join(restSymbol, this.b.repeat(sepRest, Math.max(0, restMin - 1), restMax === null ? null : restMax - 1, ruleHint(path, "items"))) : null;
    } else {
      // tail(j): what may follow once j items are written (j >= 1, so each next item needs a comma).
      let tail = sepRest && restMax !== 0 ? this.b.repeat(sepRest, restMin, restMax, ruleHint(path, "items")) : '""';
      for (let j = k - 1; j >= 1; j--) {
        const step = join(sep, element(j), tail);
        tail = this.b.symbol(ruleHint(path, `from${j}`), j < min ? step : `(${step})?`);
      }
      nonEmpty = join(element(0), tail);
    }
    const open = '"["';
    const close = '"]"';
    const empty = join(open, ws, close);
    if (min > 0) return this.b.define(ruleHint(path, "arr"), join(open, ws, nonEmpty as string, ws, close));
    if (nonEmpty === null || max === 0) return this.b.define(ruleHint(path, "arr"), empty);
    return this.b.define(ruleHint(path, "arr"), `${empty} | ${join(open, ws, nonEmpty, ws, close)}`);
  }

  // ---- objects ------------------------------------------------------------------------------

  private object(s: JsonObject, path: string): string {
    const ws = this.ws;
    const join = (...items: string[]) => items.filter((i) => i !== "" && i !== '""').join(" ") || '""';
    if ("properties" in s && !isObject(s.properties)) throw new UnsupportedSchemaError("properties", path, "must be an object");
    const properties = isObject(s.properties) ? s.properties : {};
    const required = s.required ?? [];
    if (!Array.isArray(required) || required.some((r) => typeof r !== "string")) throw new UnsupportedSchemaError("required", path, "must be an array of strings");
    const additional = this.effectiveAdditional(s, true);
    if (additional !== undefined && typeof additional !== "boolean" && !isObject(additional)) throw new UnsupportedSchemaError("additionalProperties", path, "must be a boolean or a schema");

    const declared: { key: string; schema: JsonValue; required: boolean; path: string }[] = [];
    const excluded: string[] = [];
    for (const [key, schema] of Object.entries(properties)) {
      const isRequired = required.includes(key);
      const propertyPath = `${path}/properties/${escapePointer(key)}`;
      excluded.push(key);
      if (schema === false) {
        if (isRequired) throw new UnsatisfiableSchemaError("required", path, `property ${JSON.stringify(key)} is required but its schema is false`);
        continue;
      }
      declared.push({ key, schema, required: isRequired, path: propertyPath });
    }
    for (const key of required as string[]) {
      if (Object.hasOwn(properties, key)) continue;
      if (additional === false) throw new UnsatisfiableSchemaError("required", path, `property ${JSON.stringify(key)} is required but additional properties are not allowed`);
      excluded.push(key);
      declared.push({ key, schema: additional ?? true, required: true, path: `${path}/additionalProperties` });
    }

    const sep = join(ws, '","', ws);
    const member = (d: (typeof declared)[number]) => this.b.define(ruleHint(d.path, "kv"), join(gbnfLiteral(JSON.stringify(d.key)), ws, '":"', ws, this.value(d.schema, d.path, null, "val")));

    // after(i): members from i on, each after a comma (possibly none); first(i): the same when
    // nothing was written yet, at least one member, the first without a comma (null if impossible).
    let after: string;
    let first: string | null;
    if (additional === false) {
      after = '""';
      first = null;
    } else {
      const extraValue = this.value(additional ?? true, `${path}/additionalProperties`, null, "extra");
      const extra = this.b.define(ruleHint(path, "extra-kv"), join(this.keyExcept(excluded, path), ws, '":"', ws, extraValue));
      const nextExtra = this.b.define(ruleHint(path, "extra-next"), join(sep, extra));
      after = `${nextExtra}*`;
      first = join(extra, after);
    }
    for (let i = declared.length - 1; i >= 0; i--) {
      const d = declared[i] as (typeof declared)[number];
      const kv = member(d);
      const afterSymbol = after === '""' ? '""' : this.b.symbol(ruleHint(d.path, "after"), after);
      const withThis = join(kv, afterSymbol);
      const nextAfter = d.required ? join(sep, kv, afterSymbol) : join(`(${join(sep, kv)})?`, afterSymbol);
      first = d.required || first === null ? withThis : `${withThis} | ${this.b.symbol(ruleHint(d.path, "first"), first)}`;
      after = nextAfter;
    }
    const open = '"{"';
    const close = '"}"';
    const empty = join(open, ws, close);
    const anyRequired = declared.some((d) => d.required);
    const firstSymbol = first === null ? null : this.b.symbol(ruleHint(path, "members"), first);
    if (firstSymbol === null) return this.b.define(ruleHint(path, "obj"), empty);
    const full = join(open, ws, firstSymbol, ws, close);
    return this.b.define(ruleHint(path, "obj"), anyRequired ? full : `${empty} | ${full}`);
  }

  /** A quoted JSON string whose decoded value is none of `names`. */
  private keyExcept(names: string[], path: string): string {
    const char = jsonCharRule(this.b);
    const quote = '"\\""';
    if (names.length === 0) return this.b.define("string", `${quote} ${char}* ${quote}`);
    interface Node {
      terminal: boolean;
      children: Map<number, Node>;
    }
    const root: Node = { terminal: false, children: new Map() };
    for (const name of names) {
      let node = root;
      for (const ch of name) {
        const c = ch.codePointAt(0) as number;
        let next = node.children.get(c);
        if (!next) {
          next = { terminal: false, children: new Map() };
          node.children.set(c, next);
        }
        node = next;
      }
      node.terminal = true;
    }
    const hint = ruleHint(path, "extra-key");
    const rest = this.b.define(ruleHint(path, "key-rest"), `${char}* ${quote}`);
    const emit = (node: Node): string => {
      const options: string[] = [];
      if (!node.terminal) options.push(quote);
      const others = CharSet.all().minus(CharSet.of(...node.children.keys()));
      options.push(`${jsonCharGbnf(others)} ${rest}`);
      for (const [c, child] of node.children) options.push(`${jsonCharGbnf(CharSet.of(c))} ${emit(child)}`);
      return this.b.define(hint, options.join(" | "));
    };
    return this.b.define(hint, `${quote} ${emit(root)}`);
  }
}

function hasType(v: JsonValue, t: TypeName): boolean {
  switch (t) {
    case "null":
      return v === null;
    case "boolean":
      return typeof v === "boolean";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "number":
      return typeof v === "number";
    case "string":
      return typeof v === "string";
    case "array":
      return Array.isArray(v);
    case "object":
      return isObject(v);
  }
}
