// Structural tags (vLLM's `structural_tag`, xgrammar's format) to GBNF. The typical use: free text
// in which a trigger string (e.g. "<function=") starts a tag — the rest of a begin string, a JSON
// document valid against that tag's schema, an end string — after which free text resumes.
//
// Accepted forms (a parsed JSON value, or a JSON string holding one):
// - legacy (vLLM's documented `structured_outputs.structural_tag` / `response_format` shape):
//   {"type"?: "structural_tag", "structures": [{"begin", "schema", "end"}], "triggers": [...]},
//   which xgrammar itself turns into a `triggered_tags` format;
// - xgrammar's {"type"?: "structural_tag", "format": {...}} with the format types const_string,
//   json_schema, any_text, sequence, or, tag and triggered_tags (xgrammar's field names). Every
//   other type, and fields that change the language but are not implemented (token begin / end,
//   style, any_order, max_tokens, max_chars, max_whitespace_cnt), are refused with their path.
//
// Free text is compiled from an Aho-Corasick automaton over the trigger (and excluded) strings: one
// right-recursive rule per automaton state, so the text can end anywhere, including inside a
// partial trigger, and a trigger is only ever written as the start of a tag. A trigger counts as
// reached as soon as any occurrence of it ends (also one ending inside a longer, partly written
// trigger); when several triggers end at the same place, the tags of all of them may follow.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { CharSet, charClassGbnf } from "./charset.js";
import { GrammarBuilder, alternatives, gbnfLiteral, sequence } from "./gbnf.js";
import { UnsupportedSchemaError, jsonSchemaRule, type JsonSchemaGbnfOptions } from "./json-schema.js";

/** A structural tag that is malformed, unsupported here, or inconsistent with the continued message. */
export class StructuralTagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StructuralTagError";
  }
}

export interface StructuralTagOptions extends JsonSchemaGbnfOptions {
  /**
   * Text already in the message before the output (continue_final_message): the grammar starts in
   * the state that text leaves it in. Only for a triggered_tags format (legacy form included).
   */
  prefix?: string;
}

/**
 * A complete grammar (rule `root`) for outputs matching the structural tag. JSON schemas are
 * compiled with xgrammar's strict mode in mind: an absent additionalProperties means none (set
 * disableAdditionalProperties: false for JSON Schema's reading).
 */
export function structuralTagToGbnf(tag: JsonValue, options: StructuralTagOptions = {}): string {
  const { prefix = "", ...schemaOptions } = options;
  const format = parseStructuralTag(tag);
  const b = new GrammarBuilder();
  const root = b.reserveExact("root");
  const compiler = new Compiler(b, { ...schemaOptions, disableAdditionalProperties: schemaOptions.disableAdditionalProperties ?? true });
  let body: string;
  if (prefix === "") body = compiler.expr(format, []);
  else if (format.type === "triggered_tags") body = compiler.triggeredTags(format, [], prefix);
  else throw new StructuralTagError(`a continued message (prefix) is only supported when the top-level format is triggered_tags, not ${format.type}`);
  b.set(root, body);
  return b.render(root);
}

// ---- the parsed form ----------------------------------------------------------------------------

type Format = ConstString | JsonSchemaFormat | AnyText | Composite | Tag | TriggeredTags;
interface ConstString {
  type: "const_string";
  value: string;
}
interface JsonSchemaFormat {
  type: "json_schema";
  schema: JsonValue;
  path: string;
}
interface AnyText {
  type: "any_text";
  excludes: string[];
}
interface Composite {
  type: "sequence" | "or";
  elements: Format[];
}
interface Tag {
  type: "tag";
  begin: string;
  content: Format;
  ends: string[];
  path: string;
}
interface TriggeredTags {
  type: "triggered_tags";
  triggers: string[];
  tags: Tag[];
  /** Index of the trigger each tag's begin starts with. */
  triggerOf: number[];
  atLeastOne: boolean;
  stopAfterFirst: boolean;
  excludes: string[];
}

const FORMAT_TYPES = ["const_string", "json_schema", "any_text", "sequence", "or", "tag", "triggered_tags"];

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function at(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

function fail(message: string): never {
  throw new StructuralTagError(message);
}

function str(obj: JsonObject, key: string, path: string): string {
  const v = obj[key];
  return typeof v === "string" ? v : fail(`${at(path, key)} must be a string`);
}

/** A list of non-empty strings; a `required` list must be present and non-empty. */
function strings(obj: JsonObject, key: string, path: string, required: boolean): string[] {
  const v = obj[key];
  if (v === undefined && !required) return [];
  if (!Array.isArray(v) || (required && v.length === 0)) fail(`${at(path, key)} must be a ${required ? "non-empty " : ""}array of strings`);
  return v.map((item, i) => (typeof item === "string" && item !== "" ? item : fail(`${at(path, key)}[${i}] must be a non-empty string`)));
}

function bool(obj: JsonObject, key: string, path: string): boolean {
  const v = obj[key];
  if (v === undefined) return false;
  return typeof v === "boolean" ? v : fail(`${at(path, key)} must be a boolean`);
}

function isSchema(v: JsonValue | undefined): v is JsonValue {
  return isObject(v) || typeof v === "boolean";
}

function parseStructuralTag(input: JsonValue): Format {
  let tag = input;
  if (typeof tag === "string") {
    try {
      tag = JSON.parse(tag) as JsonValue;
    } catch {
      fail("the structural tag is not valid JSON");
    }
  }
  if (!isObject(tag)) fail("a structural tag must be a JSON object");
  if (tag.type !== undefined && tag.type !== "structural_tag") fail(`type must be "structural_tag", not ${JSON.stringify(tag.type)}`);
  if ("format" in tag) {
    if ("structures" in tag || "triggers" in tag) fail('give either "format" or "structures" and "triggers", not both');
    return parseFormat(tag.format, "format");
  }
  if (!("structures" in tag) && !("triggers" in tag)) fail('a structural tag needs "format", or "structures" and "triggers"');
  const triggers = strings(tag, "triggers", "", true);
  const structures = tag.structures;
  if (!Array.isArray(structures) || structures.length === 0) fail("structures must be a non-empty array");
  const tags = structures.map((s, i): Tag => {
    const path = `structures[${i}]`;
    if (!isObject(s)) fail(`${path} must be an object`);
    if (!isSchema(s.schema)) fail(`${path}.schema must be a JSON schema (an object or a boolean)`);
    return { type: "tag", begin: str(s, "begin", path), content: { type: "json_schema", schema: s.schema, path: `${path}.schema` }, ends: [str(s, "end", path)], path };
  });
  return triggeredTags(triggers, tags, false, false, []);
}

function parseFormat(value: JsonValue | undefined, path: string): Format {
  if (!isObject(value)) fail(`${path} must be an object (a format)`);
  const type = value.type;
  if (typeof type !== "string") fail(`${path}.type must be a string (one of ${FORMAT_TYPES.join(", ")})`);
  const unsupported = (key: string, allowed: JsonValue[]) => {
    if (value[key] !== undefined && !allowed.includes(value[key] as JsonValue)) fail(`${path}.${key} = ${JSON.stringify(value[key])} is not supported`);
  };
  switch (type) {
    case "const_string":
      return { type, value: str(value, "value", path) };
    case "json_schema":
      if (!isSchema(value.json_schema)) fail(`${path}.json_schema must be a JSON schema (an object or a boolean)`);
      unsupported("style", ["json"]);
      unsupported("any_order", [false]);
      unsupported("max_whitespace_cnt", [null]);
      return { type, schema: value.json_schema, path: `${path}.json_schema` };
    case "any_text":
      unsupported("max_tokens", [null]);
      unsupported("max_chars", [null]);
      return { type, excludes: strings(value, "excludes", path, false) };
    case "sequence":
    case "or": {
      const elements = value.elements;
      if (!Array.isArray(elements) || elements.length === 0) fail(`${path}.elements must be a non-empty array of formats`);
      return { type, elements: elements.map((e, i) => parseFormat(e, `${path}.elements[${i}]`)) };
    }
    case "tag":
      return parseTag(value, path);
    case "triggered_tags": {
      const list = value.tags;
      if (!Array.isArray(list) || list.length === 0) fail(`${path}.tags must be a non-empty array of tags`);
      const tags = list.map((t, i) => {
        const tagPath = `${path}.tags[${i}]`;
        if (!isObject(t)) fail(`${tagPath} must be an object (a tag)`);
        // xgrammar lets the tags of triggered_tags leave out their type
        if (t.type !== undefined && t.type !== "tag") fail(`${tagPath}.type must be "tag"`);
        return parseTag(t, tagPath);
      });
      return triggeredTags(strings(value, "triggers", path, true), tags, bool(value, "at_least_one", path), bool(value, "stop_after_first", path), strings(value, "excludes", path, false));
    }
    default:
      return fail(`unsupported structural tag format type ${JSON.stringify(type)} at ${path} (supported: ${FORMAT_TYPES.join(", ")})`);
  }
}

function parseTag(obj: JsonObject, path: string): Tag {
  if (typeof obj.begin !== "string") fail(`${path}.begin must be a string (token begins are not supported)`);
  const content = parseFormat(obj.content, `${path}.content`);
  const end = obj.end;
  let ends: string[];
  if (typeof end === "string") ends = [end];
  else if (Array.isArray(end) && end.length > 0 && end.every((e): e is string => typeof e === "string")) ends = end;
  else return fail(`${path}.end must be a string or a non-empty array of strings (token ends are not supported)`);
  // as xgrammar: content that could run on forever needs an end to stop at
  if (unbounded(content) && ends.every((e) => e === "")) fail(`${path}.end must not be empty when the content is any_text or triggered_tags without excludes`);
  return { type: "tag", begin: obj.begin, content, ends, path };
}

/** Content that only an enclosing end string can stop (xgrammar: unlimited and not excluded). */
function unbounded(f: Format): boolean {
  if (f.type === "any_text" || f.type === "triggered_tags") return f.excludes.length === 0;
  if (f.type === "sequence" || f.type === "or") return f.elements.some(unbounded);
  return false;
}

function triggeredTags(triggers: string[], tags: Tag[], atLeastOne: boolean, stopAfterFirst: boolean, excludes: string[]): TriggeredTags {
  const triggerOf = tags.map((tag) => {
    const matches = triggers.flatMap((t, k) => (tag.begin.startsWith(t) ? [k] : []));
    if (matches.length === 0) fail(`${tag.path}.begin must start with one of the triggers`);
    if (matches.length > 1) fail(`${tag.path}.begin starts with more than one trigger (${matches.map((k) => JSON.stringify(triggers[k])).join(", ")}); each tag must match exactly one`);
    return matches[0] as number;
  });
  return { type: "triggered_tags", triggers, tags, triggerOf, atLeastOne, stopAfterFirst, excludes };
}

// ---- compilation --------------------------------------------------------------------------------

class Compiler {
  constructor(
    private readonly b: GrammarBuilder,
    private readonly schemaOptions: JsonSchemaGbnfOptions,
  ) {}

  /** `f` as a GBNF expression; `ends`: the end strings of the nearest enclosing tag, which free text inside it never contains. */
  expr(f: Format, ends: string[]): string {
    switch (f.type) {
      case "const_string":
        return gbnfLiteral(f.value);
      case "json_schema":
        return this.schema(f);
      case "any_text": {
        const excludes = [...f.excludes, ...ends.filter((e) => e !== "")];
        if (excludes.length === 0) return `${charClassGbnf(CharSet.all())}*`;
        return new FreeText(this.b, new Automaton([], excludes), [], false).rule();
      }
      case "sequence":
        return sequence(f.elements.map((e) => this.expr(e, ends)));
      case "or":
        return alternatives(f.elements.map((e) => this.expr(e, ends)));
      case "tag":
        return sequence([gbnfLiteral(f.begin), this.expr(f.content, f.ends), endExpr(f.ends)]);
      case "triggered_tags":
        return this.triggeredTags(f, ends, "");
    }
  }

  private schema(f: JsonSchemaFormat): string {
    try {
      return jsonSchemaRule(this.b, f.schema, this.schemaOptions, "json");
    } catch (err) {
      if (err instanceof UnsupportedSchemaError) err.message = `${f.path}: ${err.message}`;
      throw err;
    }
  }

  /** triggered_tags, starting where `prefix` (text already written) leaves it. */
  triggeredTags(f: TriggeredTags, ends: string[], prefix: string): string {
    const auto = new Automaton(f.triggers, [...f.excludes, ...ends.filter((e) => e !== "")]);
    const begins = f.tags.map((t) => Array.from(t.begin));
    // what follows a tag's begin: its content and end
    const bodies = f.tags.map((t) => this.b.symbol("tag-body", sequence([this.expr(t.content, t.ends), endExpr(t.ends)])));
    const fromOffset = (tag: number, offset: number) => sequence([gbnfLiteral(begins[tag]?.slice(offset).join("") ?? ""), bodies[tag] as string]);
    const byTrigger = f.triggers.map((trigger, k) => f.tags.flatMap((_, i) => (f.triggerOf[i] === k ? [fromOffset(i, Array.from(trigger).length)] : [])));
    const text = new FreeText(this.b, auto, byTrigger, !f.stopAfterFirst);

    // Where the written text leaves the output: in free text at an automaton state, or part-way
    // through the begin strings of some tags (at_least_one: the output starts with a whole tag).
    let node: AcNode | null = f.atLeastOne ? null : auto.root;
    let open = f.atLeastOne ? f.tags.map((_, tag) => ({ tag, offset: 0 })) : [];
    const misfit = (why: string) => fail(`the continued message does not fit the structural tag: ${why}`);
    for (const ch of prefix) {
      if (node !== null) {
        const next = auto.next(node, ch.codePointAt(0) as number);
        if (next.excluded) misfit("its free text contains an excluded string");
        if (next.triggers.length === 0) {
          node = next;
          continue;
        }
        open = f.tags.flatMap((t, tag) => (next.triggers.includes(f.triggerOf[tag] as number) ? [{ tag, offset: Array.from(f.triggers[f.triggerOf[tag] as number] as string).length }] : []));
        if (open.length === 0) misfit("it contains a trigger that no tag starts with");
        node = null;
        continue;
      }
      if (open.some(({ tag, offset }) => offset === begins[tag]?.length)) {
        fail("the continued message ends inside a structural tag's content; only a message ending in free text or inside a begin string can be continued");
      }
      open = open.filter(({ tag, offset }) => begins[tag]?.[offset] === ch).map(({ tag, offset }) => ({ tag, offset: offset + 1 }));
      if (open.length === 0) misfit("it matches no tag's begin string");
    }
    if (node !== null) return text.rule(node);
    return sequence([alternatives(open.map(({ tag, offset }) => fromOffset(tag, offset))), f.stopAfterFirst ? '""' : text.rule()]);
  }
}

function endExpr(ends: string[]): string {
  return alternatives(ends.map((e) => gbnfLiteral(e)));
}

// ---- free text ----------------------------------------------------------------------------------

/** A state of the automaton: the longest suffix of the text so far that is a prefix of a pattern. */
class AcNode {
  readonly children = new Map<number, AcNode>();
  fail: AcNode = this;
  /** Triggers ending here (directly or as a suffix). */
  triggers: number[] = [];
  /** An excluded string ends here. */
  excluded = false;
}

/** Aho-Corasick automaton over code points for the triggers and the excluded strings. */
class Automaton {
  readonly root = new AcNode();
  readonly alphabet = new Set<number>();

  constructor(triggers: string[], excludes: string[]) {
    const insert = (pattern: string): AcNode => {
      let node = this.root;
      for (const ch of pattern) {
        const c = ch.codePointAt(0) as number;
        this.alphabet.add(c);
        let child = node.children.get(c);
        if (!child) {
          child = new AcNode();
          node.children.set(c, child);
        }
        node = child;
      }
      return node;
    };
    triggers.forEach((t, k) => insert(t).triggers.push(k));
    for (const e of excludes) insert(e).excluded = true;
    // Breadth first, so a node's failure node (shallower) already holds everything ending there.
    const queue: AcNode[] = [];
    for (const child of this.root.children.values()) {
      child.fail = this.root;
      queue.push(child);
    }
    for (let i = 0; i < queue.length; i++) {
      const node = queue[i] as AcNode;
      node.triggers = [...new Set([...node.triggers, ...node.fail.triggers])];
      node.excluded ||= node.fail.excluded;
      for (const [c, child] of node.children) {
        child.fail = this.next(node.fail, c);
        queue.push(child);
      }
    }
  }

  next(node: AcNode, c: number): AcNode {
    for (let n = node; ; n = n.fail) {
      const child = n.children.get(c);
      if (child) return child;
      if (n === this.root) return n;
    }
  }
}

/**
 * Free text as GBNF: one rule per automaton state, `"" | class next-state | ...`, so the text may
 * end anywhere. A character completing an excluded string is never allowed; one completing a
 * trigger continues with the tags of the triggers ending there (`byTrigger`: alternatives per
 * trigger, each the rest of a begin string, content and end) and then, with `loop`, free text
 * again, otherwise nothing. A trigger without tags is thus simply never written.
 */
class FreeText {
  private readonly names = new Map<AcNode, string>();
  private readonly dispatches = new Map<AcNode, string | null>();
  private readonly pending: AcNode[] = [];

  constructor(
    private readonly b: GrammarBuilder,
    private readonly auto: Automaton,
    private readonly byTrigger: string[][],
    private readonly loop: boolean,
  ) {}

  /** The rule for free text starting in `node` (and, built with it, every state it reaches). */
  rule(node: AcNode = this.auto.root): string {
    const known = this.names.get(node);
    if (known !== undefined) return known;
    const name = this.b.reserve("text");
    this.names.set(node, name);
    this.pending.push(node);
    // bodies refer to each other, so names come first and bodies are filled in from a worklist
    if (this.pending.length === 1) {
      for (let n = this.pending[0]; n !== undefined; n = this.pending[0]) {
        this.b.set(this.names.get(n) as string, this.body(n));
        this.pending.shift();
      }
    }
    return name;
  }

  private body(node: AcNode): string {
    const follows = new Map<string, number[]>();
    let others = CharSet.all();
    for (const c of this.auto.alphabet) {
      const next = this.auto.next(node, c);
      if (next === this.auto.root) continue;
      others = others.minus(CharSet.of(c));
      const follow = next.excluded ? null : next.triggers.length > 0 ? this.dispatch(next) : this.rule(next);
      if (follow !== null) follows.set(follow, [...(follows.get(follow) ?? []), c]);
    }
    const options = ['""', `${charClassGbnf(others)} ${this.rule()}`];
    for (const [follow, chars] of follows) {
      const first = chars.length === 1 ? gbnfLiteral(String.fromCodePoint(chars[0] as number)) : charClassGbnf(CharSet.of(...chars));
      options.push(`${first} ${follow}`);
    }
    return options.join(" | ");
  }

  /** What follows the character that completes the triggers of `node` (null: nothing may). */
  private dispatch(node: AcNode): string | null {
    if (this.dispatches.has(node)) return this.dispatches.get(node) ?? null;
    const options = node.triggers.flatMap((k) => this.byTrigger[k] ?? []);
    const name = options.length === 0 ? null : this.b.define("tag", sequence([alternatives(options), this.loop ? this.rule() : '""']));
    this.dispatches.set(node, name);
    return name;
  }
}
