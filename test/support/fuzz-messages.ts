// Request generators driven by the proto descriptors: REST JSON bodies and query values field by
// field (right-typed, wrong-typed, null, boundary, huge, deep), and well-typed protobuf messages for
// the Connect and gRPC clients. The srl.v1.field rules (required, nullable, uuid, ge/le, literal)
// steer what "right" means; the objects created for the run (FuzzTargets) are what ids aim at.
import fc from "fast-check";
import { getOption, hasOption, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { field as fieldOption } from "../../gen/srl/v1/options_pb.js";
import {
  anyStringArb,
  arbitraryJsonArb,
  deepArb,
  extremeNumberArb,
  isFuzzObject,
  LONG_STRING,
  NASTY_STRINGS,
  ONE_MIB_STRING,
  operatorObjectArb,
  RAW_STRINGS,
  RawJson,
  type FuzzJson,
} from "./fuzz-json.js";

export type Owner = "a" | "b";

export interface TargetModel {
  id: string;
  project: string;
  name: string;
  runId: string;
  checkpointIds: string[];
}

/** Real objects of two entities in the fuzzed server's database. */
export interface FuzzTargets {
  entity: Record<Owner, string>;
  key: Record<Owner, string>;
  models: Record<Owner, TargetModel[]>;
  jobs: Record<Owner, string[]>;
  artifactUrls: Record<Owner, string[]>;
}

export interface Rule {
  required: boolean;
  nullable: boolean;
  uuid: boolean;
  ge?: bigint;
  le?: bigint;
  literal: string[];
  stringOrList: boolean;
}

export function ruleOf(field: DescField): Rule {
  const opts = hasOption(field, fieldOption) ? getOption(field, fieldOption) : undefined;
  return {
    required: opts?.required ?? false,
    nullable: opts?.nullable ?? false,
    uuid: opts?.uuid ?? false,
    ge: opts?.ge ? BigInt(opts.ge.replace(/\.0*$/, "")) : undefined,
    le: opts?.le ? BigInt(opts.le.replace(/\.0*$/, "")) : undefined,
    literal: opts?.literal ?? [],
    stringOrList: opts?.stringOrList ?? false,
  };
}

/** The field's key in REST JSON: the proto name, unless json_name is set explicitly (`_backend`). */
export function restName(field: DescField): string {
  const camel = field.name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  return field.jsonName !== camel ? field.jsonName : field.name;
}

const INT32 = { min: -(2n ** 31n), max: 2n ** 31n - 1n };
const UINT32 = { min: 0n, max: 2n ** 32n - 1n };
const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };
const UINT64 = { min: 0n, max: 2n ** 64n - 1n };

function intRange(scalar: ScalarType): { min: bigint; max: bigint; is64: boolean } | undefined {
  switch (scalar) {
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { ...INT32, is64: false };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { ...UINT32, is64: false };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { ...INT64, is64: true };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { ...UINT64, is64: true };
    default:
      return undefined;
  }
}

const isFloat = (scalar: ScalarType | undefined) => scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT;
const maxBig = (a: bigint, b: bigint) => (a > b ? a : b);
const minBig = (a: bigint, b: bigint) => (a < b ? a : b);

/** Id-like values: the run's objects (either entity), unknown UUIDs, near-misses. */
export class Pools {
  constructor(readonly t: FuzzTargets) {}

  private models = (o: Owner) => this.t.models[o];
  modelIds = (o: Owner) => this.models(o).map((m) => m.id);
  runIds = (o: Owner) => this.models(o).map((m) => m.runId);
  checkpointIds = (o: Owner) => this.models(o).flatMap((m) => m.checkpointIds);
  modelRefs = (o: Owner) =>
    this.models(o).flatMap((m) => [
      `${m.project}/${m.name}`,
      `${m.project}/${m.name}:step0`,
      `${m.project}/${m.name}:step1`,
      `wandb-artifact:///${this.t.entity[o]}/${m.project}/${m.name}`,
      `wandb-artifact:///${this.t.entity[o]}/${m.project}/${m.name}:latest`,
      `wandb-artifact://${this.t.entity[o]}/${m.project}/${m.name}:v0`,
    ]);

  /** Every string that names an object of `o` (for the cross-entity property). */
  markers(o: Owner): string[] {
    return [...this.modelIds(o), ...this.runIds(o), ...this.t.jobs[o], ...this.t.artifactUrls[o], `/${this.t.entity[o]}/`, JSON.stringify(this.t.entity[o])];
  }

  private of(values: (o: Owner) => string[]): fc.Arbitrary<string> {
    const own = values("a");
    const other = values("b");
    return fc.oneof(
      { arbitrary: own.length > 0 ? fc.constantFrom(...own) : fc.uuid(), weight: 4 },
      { arbitrary: other.length > 0 ? fc.constantFrom(...other) : fc.uuid(), weight: 2 },
      { arbitrary: fc.uuid(), weight: 2 },
      { arbitrary: fc.constantFrom("00000000-0000-0000-0000-000000000000", "urn:uuid:3c90c3cc-0d44-4b50-8888-8dd25736052a", "3C90C3CC0D444B5088888DD25736052A", "{3c90c3cc-0d44-4b50-8888-8dd25736052a}"), weight: 1 },
      { arbitrary: anyStringArb, weight: 1 },
    );
  }

  modelId = () => this.of(this.modelIds);
  runId = () => this.of(this.runIds);
  jobId = () => this.of((o) => this.t.jobs[o]);
  checkpointId = () => this.of(this.checkpointIds);
  anyId = () => fc.oneof(this.modelId(), this.runId(), this.jobId(), this.checkpointId());

  artifactUrl = (): fc.Arbitrary<string> =>
    fc.oneof(
      { arbitrary: this.of((o) => this.t.artifactUrls[o]), weight: 3 },
      { arbitrary: this.of(this.modelRefs), weight: 3 },
      {
        arbitrary: fc.constantFrom(
          "wandb-artifact:///",
          "wandb-artifact:///x",
          "file:///etc/passwd",
          "/etc/passwd",
          "../../../../etc/passwd",
          "https://example.invalid/train.jsonl",
          "http://169.254.169.254/latest/meta-data/",
          `wandb-artifact:///${this.t.entity.a}/../${this.t.entity.b}/x:v0`,
          `wandb-artifact:///${this.t.entity.a}/p/%2e%2e:v0`,
          `wandb-artifact:///${this.t.entity.a}/p/n:v99999999999999999999`,
          `wandb-artifact:///${this.t.entity.a}/p/n:v-1`,
          `wandb-artifact:///${this.t.entity.a}/p/n:latest:latest`,
        ),
        weight: 2,
      },
      { arbitrary: anyStringArb, weight: 1 },
    );

  chatModel = (): fc.Arbitrary<string> =>
    fc.oneof(
      { arbitrary: fc.constantFrom("tiny-chat", "tiny-tools"), weight: 6 },
      { arbitrary: this.of(this.modelRefs), weight: 3 },
      { arbitrary: fc.constantFrom("no-such-model", "tiny-chat:step1", "hf:nobody/nothing", "../tiny-chat", "TINY-CHAT", "tiny-chat\u0000"), weight: 1 },
      { arbitrary: anyStringArb, weight: 1 },
    );

  entityName = (): fc.Arbitrary<string> =>
    fc.oneof({ arbitrary: fc.constant(this.t.entity.a), weight: 4 }, { arbitrary: fc.constant(this.t.entity.b), weight: 2 }, { arbitrary: anyStringArb, weight: 1 });
}

const NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789._-";
const nameArb = fc.oneof(
  { arbitrary: fc.string({ unit: fc.constantFrom(...NAME_CHARS), minLength: 1, maxLength: 12 }).map((s) => `fz-${s}`), weight: 4 },
  { arbitrary: fc.constantFrom("pa", "pb", "ma0", "mb0", "data"), weight: 2 },
  { arbitrary: anyStringArb, weight: 1 },
);

/** Metric maps (a trajectory's or a group's `metrics`): names that are awkward as document keys, numeric values. */
const METRIC_NAMES = ["", " ", "\t", "x\t", " x", "x ", "\n", "a.b", "a..b", ".", "$x", "a$", "__proto__", "constructor", "val/x", "train/", "/", "a/b/c", "\u0000", "é", "🙂", "group_x"];
function metricsArb(numbersOnly: boolean): fc.Arbitrary<FuzzJson> {
  const name = fc.oneof({ arbitrary: fc.constantFrom("correct", "len", "score", "acc"), weight: 4 }, { arbitrary: fc.constantFrom(...METRIC_NAMES), weight: 3 }, { arbitrary: anyStringArb, weight: 1 });
  const value: fc.Arbitrary<FuzzJson> = numbersOnly
    ? fc.oneof(fc.double({ min: -10, max: 10, noNaN: true }), fc.boolean(), fc.integer({ min: -5, max: 5 }))
    : fc.oneof({ arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 4 }, { arbitrary: fc.boolean(), weight: 1 }, { arbitrary: extremeNumberArb, weight: 1 }, { arbitrary: arbitraryJsonArb, weight: 1 });
  return fc.dictionary(name, value, { maxKeys: 4 });
}

const jsonSchemaArb: fc.Arbitrary<FuzzJson> = fc.oneof(
  { arbitrary: fc.constantFrom<FuzzJson>({ type: "object" }, { type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { type: "string", pattern: "a+" }, { type: "integer", minimum: 0, maximum: 3 }, { enum: ["x", "y"] }, { type: "array", items: { type: "boolean" }, maxItems: 2 }, { $ref: "#" }, { type: "object", properties: { n: { $ref: "#" } } }, { type: "string", format: "date-time" }, { anyOf: [{ type: "null" }, { const: 1 }] }, { not: {} }, { type: "string", pattern: "(a+)+$" }, { type: "string", minLength: 100000 }), weight: 4 },
  { arbitrary: arbitraryJsonArb, weight: 1 },
);

const contentArb: fc.Arbitrary<FuzzJson> = fc.oneof(
  { arbitrary: fc.oneof(fc.constantFrom("hi", "Say one word.", "2+2?"), anyStringArb), weight: 6 },
  { arbitrary: anyStringArb.map((text): FuzzJson => [{ type: "text", text }]), weight: 2 },
  { arbitrary: fc.constantFrom<FuzzJson>(null, [], [{ type: "image_url", image_url: { url: "http://x/y.png" } }], [{ type: "text" }], [{ text: 1 }], { type: "text", text: "x" }), weight: 1 },
  { arbitrary: arbitraryJsonArb, weight: 1 },
);

/**
 * How a generated message looks: "plausible" (what a client would send, aimed at the caller's own
 * objects: it gets past validation and reaches the handlers and the engine), "valid" (right types
 * and ranges, adversarial content) or "chaotic" (any field may be wrong, null, at a bound, huge).
 */
export type Mode = "plausible" | "valid" | "chaotic";

/** What a client would send for fields with a known meaning (plausible mode). */
function plausibleHint(name: string, pools: Pools): fc.Arbitrary<FuzzJson> | undefined {
  const own = (values: string[]) => (values.length > 0 ? fc.constantFrom(...values) : fc.uuid());
  switch (name) {
    case "model_id":
      return own(pools.modelIds("a"));
    case "training_job_id":
      return own(pools.t.jobs.a);
    case "run_id":
      return own(pools.runIds("a"));
    case "after":
      return own(pools.checkpointIds("a"));
    case "model":
      return fc.oneof({ arbitrary: fc.constantFrom("tiny-chat", "tiny-tools"), weight: 3 }, { arbitrary: own(pools.modelRefs("a")), weight: 1 });
    case "base_model":
      return fc.constantFrom("tiny-chat", "tiny-tools");
    case "entity":
      return fc.constant(pools.t.entity.a);
    case "project":
    case "name":
      return fc.string({ unit: fc.constantFrom(...NAME_CHARS), minLength: 1, maxLength: 12 }).map((s) => `fz-${s}`);
    case "url":
    case "training_data_url":
      return own([...pools.t.artifactUrls.a, ...pools.modelRefs("a")]);
    case "kl_ref_adapter_path":
      return own(pools.modelRefs("a"));
    case "role":
      return fc.constantFrom("user", "user", "system", "assistant");
    case "content":
      return fc.oneof({ arbitrary: fc.constantFrom<FuzzJson>("hi", "Say one word.", "2+2?", "Write JSON.", ""), weight: 4 }, { arbitrary: fc.constant<FuzzJson>([{ type: "text", text: "hi" }]), weight: 1 });
    case "split":
      return fc.constantFrom("train", "val", "test");
    case "filename":
      return fc.constantFrom("train.jsonl", "metadata.json", "notes.txt");
    case "arguments":
      return fc.constantFrom("{}", '{"a": 1}');
    case "schema":
    case "parameters":
      return fc.constantFrom<FuzzJson>({ type: "object" }, { type: "object", properties: { a: { type: "string", maxLength: 3 } }, required: ["a"] }, { type: "string", enum: ["x", "y"] }, { type: "integer", minimum: 0, maximum: 9 });
    case "json":
      return fc.constantFrom<FuzzJson>({ type: "string", maxLength: 4 }, { enum: ["a", "b"] });
    case "regex":
      return fc.constantFrom("a|b", "[0-9]{1,3}", "(yes|no)");
    case "whitespace_pattern":
      return fc.constantFrom(" ?", "[ ]?");
    case "grammar":
      return fc.constantFrom('root ::= "a"', 'root ::= [a-z] [a-z]?');
    case "chat_template":
      return fc.constantFrom("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}assistant:", "{{ messages[0].content }}");
    case "choice":
      return fc.constantFrom<FuzzJson>(["a", "b"], ["yes", "no", "maybe"]);
    case "stop":
    case "bad_words":
      return fc.constantFrom<FuzzJson>(["\n"], "x", [], ["a", "b"]);
    case "tool_choice":
      return fc.constantFrom<FuzzJson>("none", "auto", "required", { type: "function", function: { name: "f" } });
    case "batch_size":
      return fc.constantFrom<FuzzJson>(1, 2, "auto");
    case "learning_rate":
      return fc.constantFrom<FuzzJson>(0.0001, 5e-5, [0.001, 0.0005]);
    case "logit_bias":
      return fc.constantFrom<FuzzJson>({ "1": -100 }, { "5": 2.5, "7": 100 });
    case "metrics":
      return metricsArb(true);
    case "messages_and_choices":
      return fc.constantFrom<FuzzJson>([{ role: "user", content: "hi" }, { role: "assistant", content: "yo" }], [{ role: "user", content: "2+2?" }]);
    default:
      return undefined;
  }
}

/** REST-JSON values for fields with a known meaning, by field name. */
function jsonHint(name: string, pools: Pools, mode: Mode = "valid"): fc.Arbitrary<FuzzJson> | undefined {
  if (mode === "plausible") {
    const plausible = plausibleHint(name, pools);
    if (plausible) return plausible;
  }
  switch (name) {
    case "model_id":
      return pools.modelId();
    case "training_job_id":
      return pools.jobId();
    case "run_id":
      return pools.runId();
    case "after":
      return fc.oneof(pools.checkpointId(), pools.anyId());
    case "model":
      return pools.chatModel();
    case "base_model":
      return fc.oneof({ arbitrary: fc.constantFrom("tiny-chat", "tiny-tools"), weight: 5 }, { arbitrary: anyStringArb, weight: 1 });
    case "entity":
      return pools.entityName();
    case "project":
    case "name":
      return nameArb;
    case "url":
    case "training_data_url":
      return pools.artifactUrl();
    case "kl_ref_adapter_path":
      return fc.oneof(fc.constantFrom(...pools.modelRefs("a"), "/etc/passwd", "../x", "/tmp"), anyStringArb);
    case "role":
      return fc.oneof({ arbitrary: fc.constantFrom("user", "assistant", "system", "tool", "developer"), weight: 8 }, { arbitrary: anyStringArb, weight: 1 });
    case "content":
      return contentArb;
    case "split":
      return fc.oneof(fc.constantFrom("train", "val", "test"), anyStringArb);
    case "filename":
      return fc.oneof(fc.constantFrom("train.jsonl", "metadata.json", "../../x", "/etc/passwd", ".", "", "a\u0000b", "x".repeat(300)), anyStringArb);
    case "arguments":
      return fc.oneof(fc.constantFrom("{}", '{"a": 1}', "{", "null"), anyStringArb);
    case "schema":
    case "parameters":
    case "json":
      return jsonSchemaArb;
    case "regex":
    case "whitespace_pattern":
      return fc.oneof(fc.constantFrom("a|b", "[0-9]{1,3}", "(a+)+$", "(", "\\", ".*", "[^]", "a{999999}"), anyStringArb);
    case "grammar":
      return fc.oneof(fc.constantFrom('root ::= "a"', "root ::= root", 'root ::= [a-z]{1,3} "."', "root ::=", "x ::= y"), anyStringArb);
    case "chat_template":
      return fc.oneof(fc.constantFrom("{{ messages[0].content }}", "{% for m in messages %}{{ m.content }}{% endfor %}", "{{", "{% raw %}", "{{ range(10000000) | list }}", "{{ ''.__class__ }}"), anyStringArb);
    case "choice":
      return fc.array(anyStringArb, { maxLength: 3 });
    case "tool_choice":
      return fc.oneof(fc.constantFrom<FuzzJson>("none", "auto", "required", { type: "function", function: { name: "f" } }, { type: "function" }, { function: { name: 1 } }), arbitraryJsonArb);
    case "metrics":
      return metricsArb(false);
    case "stop":
    case "bad_words":
      return fc.oneof(fc.array(anyStringArb, { maxLength: 3 }), anyStringArb);
    default:
      return undefined;
  }
}

const ABSENT = Symbol("absent");
/** Plausible requests carry these (a chat message's content, a trajectory's reward). */
const USUALLY_PRESENT = new Set(["content", "reward", "max_tokens", "model"]);
/** Options the service refuses by design, or that change the whole request: rare in plausible requests. */
const RARELY_PRESENT = new Set(["kv_transfer_params", "mm_processor_kwargs", "engine_xargs", "vllm_xargs", "structural_tag", "use_beam_search", "priority", "echo", "continue_final_message", "documents", "chat_template", "add_generation_prompt", "entity"]);
type Maybe = FuzzJson | typeof ABSENT;

/** REST JSON bodies and values built from the input message descriptors. */
export class JsonGen {
  private cache = new Map<string, fc.Arbitrary<FuzzJson>>();
  constructor(readonly pools: Pools) {}

  /** A JSON object for `desc`, without the fields in `exclude` (those bound by the path). */
  message(desc: DescMessage, mode: Mode, depth = 0, exclude: ReadonlySet<string> = new Set()): fc.Arbitrary<FuzzJson> {
    const key = `${desc.typeName}|${mode}|${depth}|${[...exclude].join(",")}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    let arb: fc.Arbitrary<FuzzJson>;
    const wkt = this.wellKnown(desc, depth);
    if (wkt) arb = wkt;
    else if (depth > 4) arb = fc.constantFrom<FuzzJson>({}, null);
    else {
      const fields = desc.fields.filter((f) => !exclude.has(f.name));
      const entries = fields.map((f) => this.presence(f, mode, depth).map((value) => [restName(f), value] as const));
      const extras = fc.oneof(
        { arbitrary: fc.constant<[string, FuzzJson][]>([]), weight: mode === "plausible" ? 1000 : mode === "valid" ? 12 : 6 },
        { arbitrary: fc.array(fc.tuple(anyStringArb, arbitraryJsonArb), { maxLength: 3 }), weight: 1 },
        // camelCase spellings of real fields (ignored as unknown on REST)
        { arbitrary: fc.array(fc.tuple(fc.constantFrom(...(fields.length > 0 ? fields.map((f) => f.jsonName) : ["x"])), arbitraryJsonArb), { maxLength: 2 }), weight: 1 },
      );
      arb = fc.tuple(fc.tuple(...entries), extras).map(([pairs, extra]) => {
        const out: { [key: string]: FuzzJson } = {};
        for (const [name, value] of pairs) if (value !== ABSENT) out[name] = value;
        for (const [name, value] of extra) out[name] = value;
        return out;
      });
    }
    this.cache.set(key, arb);
    return arb;
  }

  private wellKnown(desc: DescMessage, depth: number): fc.Arbitrary<FuzzJson> | undefined {
    switch (desc.typeName) {
      case "google.protobuf.Value":
        return fc.oneof({ arbitrary: arbitraryJsonArb, weight: 20 }, { arbitrary: deepArb, weight: depth > 2 ? 0 : 1 });
      case "google.protobuf.Struct":
        return fc.oneof({ arbitrary: fc.dictionary(anyStringArb, arbitraryJsonArb, { maxKeys: 4 }), weight: 10 }, { arbitrary: fc.constant<FuzzJson>({}), weight: 4 });
      case "google.protobuf.ListValue":
        return fc.array(arbitraryJsonArb, { maxLength: 4 });
      default:
        return undefined;
    }
  }

  /** Absent, or a value of some category for `field`. */
  private presence(field: DescField, mode: Mode, depth: number): fc.Arbitrary<Maybe> {
    const rule = ruleOf(field);
    const right = this.right(field, mode, depth);
    if (mode === "plausible") {
      const absent = rule.required || USUALLY_PRESENT.has(field.name) ? 0 : RARELY_PRESENT.has(field.name) ? 40 : 7;
      return fc.oneof({ arbitrary: fc.constant<Maybe>(ABSENT), weight: absent }, { arbitrary: right, weight: 1 });
    }
    if (mode === "valid") {
      return fc.oneof(
        { arbitrary: fc.constant<Maybe>(ABSENT), weight: rule.required ? 0 : 5 },
        { arbitrary: right, weight: 4 },
        { arbitrary: fc.constant<Maybe>(null), weight: rule.nullable ? 1 : 0 },
      );
    }
    return fc.oneof(
      { arbitrary: fc.constant<Maybe>(ABSENT), weight: 40 },
      { arbitrary: right, weight: 25 },
      { arbitrary: this.wrong(field), weight: 10 },
      { arbitrary: fc.constant<Maybe>(null), weight: 7 },
      { arbitrary: this.boundary(field), weight: 12 },
      { arbitrary: operatorObjectArb, weight: 3 },
      { arbitrary: this.huge(field), weight: 1 },
      { arbitrary: deepArb, weight: 1 },
    );
  }

  /** A value of the right JSON type (in range, from the literal set, from the pools). */
  right(field: DescField, mode: Mode, depth: number): fc.Arbitrary<FuzzJson> {
    const rule = ruleOf(field);
    const hint = jsonHint(field.name, this.pools, mode);
    switch (field.fieldKind) {
      case "scalar":
        return this.scalarRight(field.scalar, field.name, rule, hint, mode);
      case "enum":
        return fc.oneof(fc.constantFrom(...field.enum.values.map((v) => v.name)), fc.integer({ min: 0, max: 3 }));
      case "message":
        return hint ?? (mode === "plausible" && field.message.typeName === "google.protobuf.Value" ? fc.constantFrom<FuzzJson>(1, "x", true) : this.message(field.message, mode, depth + 1));
      case "list": {
        if (hint && (field.listKind === "scalar" || mode === "plausible")) return hint;
        const item: fc.Arbitrary<FuzzJson> =
          field.listKind === "scalar"
            ? this.scalarRight(field.scalar, field.name, rule, undefined, mode)
            : field.listKind === "enum"
              ? fc.constantFrom(...field.enum.values.map((v) => v.name))
              : this.message(field.message, mode, depth + 1);
        const list = fc.array(item, { minLength: rule.required && mode !== "chaotic" ? 1 : 0, maxLength: depth > 2 || mode === "plausible" ? (mode === "plausible" ? 2 : 1) : 3 });
        return rule.stringOrList ? fc.oneof(list, anyStringArb) : list;
      }
      case "map": {
        if (hint && mode === "plausible") return hint;
        const keyArb = intRange(field.mapKey) ? fc.integer({ min: -5, max: 1000 }).map(String) : anyStringArb;
        const value: fc.Arbitrary<FuzzJson> =
          field.mapKind === "scalar" ? this.scalarRight(field.scalar, field.name, rule, undefined, mode) : field.mapKind === "enum" ? fc.constant(0) : this.message(field.message, mode, depth + 1);
        return fc.dictionary(keyArb, value, { maxKeys: 3 });
      }
    }
  }

  private scalarRight(scalar: ScalarType, name: string, rule: Rule, hint: fc.Arbitrary<FuzzJson> | undefined, mode: Mode): fc.Arbitrary<FuzzJson> {
    if (mode === "plausible") {
      if (rule.literal.length > 0) return fc.constantFrom<FuzzJson>(...rule.literal);
      if (hint) return hint;
      const range = intRange(scalar);
      if (range) return fc.bigInt({ min: maxBig(rule.ge ?? 0n, range.min), max: minBig(rule.le ?? 8n, maxBig(rule.ge ?? 0n, 8n)) }).map(Number);
      if (isFloat(scalar)) return fc.double({ min: Number(rule.ge ?? 0), max: Math.min(Number(rule.le ?? 1), Math.max(Number(rule.ge ?? 0), 1)), noNaN: true });
      if (scalar === ScalarType.BOOL) return fc.boolean();
      if (scalar === ScalarType.BYTES) return fc.constant(Buffer.from('{"messages": []}\n').toString("base64"));
      return fc.constantFrom("x", "hello", "fz-1");
    }
    if (rule.literal.length > 0) return fc.oneof({ arbitrary: fc.constantFrom<FuzzJson>(...rule.literal), weight: 5 }, { arbitrary: hint ?? fc.constant<FuzzJson>(rule.literal[0] ?? ""), weight: scalar === ScalarType.STRING ? 0 : 1 });
    if (hint && (scalar === ScalarType.STRING || scalar === ScalarType.BYTES)) return hint;
    if (rule.uuid) return this.pools.anyId();
    const range = intRange(scalar);
    if (range) {
      const min = rule.ge !== undefined ? maxBig(rule.ge, range.min) : range.min;
      const max = rule.le !== undefined ? minBig(rule.le, range.max) : range.max;
      const small = fc.bigInt({ min: maxBig(min, -3n), max: minBig(max, 12n) });
      const big = fc.bigInt({ min, max });
      const edge = fc.constantFrom(min, max);
      return fc.oneof({ arbitrary: small, weight: 6 }, { arbitrary: big, weight: 2 }, { arbitrary: edge, weight: 2 }).map((n): FuzzJson => (range.is64 && (n > 2n ** 53n || n < -(2n ** 53n)) ? new RawJson(n.toString()) : Number(n)));
    }
    if (isFloat(scalar)) {
      const min = rule.ge !== undefined ? Number(rule.ge) : undefined;
      const max = rule.le !== undefined ? Number(rule.le) : undefined;
      return fc.oneof(
        { arbitrary: fc.double({ min: min ?? -2, max: max ?? 2, noNaN: true }), weight: 4 },
        { arbitrary: fc.double({ min, max, noNaN: true, noDefaultInfinity: true }), weight: 1 },
        { arbitrary: fc.integer({ min: Math.max(min ?? -3, -3), max: Math.min(max ?? 3, 3) }), weight: 2 },
      );
    }
    switch (scalar) {
      case ScalarType.BOOL:
        return fc.boolean();
      case ScalarType.BYTES:
        return fc.uint8Array({ maxLength: 48 }).map((b) => Buffer.from(b).toString("base64"));
      default:
        return name === "id" ? this.pools.anyId() : anyStringArb;
    }
  }

  /** A value of another JSON type than the field takes. */
  wrong(field: DescField): fc.Arbitrary<FuzzJson> {
    const scalar = field.fieldKind === "scalar" || field.fieldKind === "list" ? field.scalar : undefined;
    const numbers = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
    const strings = fc.oneof(fc.constantFrom("12", "1.5", "abc", "true", "null", "", " 7 ", "0x10", "1e3", "NaN", "-Infinity"), anyStringArb);
    const containers = fc.constantFrom<FuzzJson>([], {}, [1, "a"], { a: 1 }, [[]], [null]);
    if (field.fieldKind === "list" || field.fieldKind === "map" || field.fieldKind === "message")
      return fc.oneof(strings, numbers, fc.boolean(), containers, fc.array(fc.oneof(numbers, strings, fc.constant(null), fc.constant<FuzzJson>([])), { minLength: 1, maxLength: 3 }));
    if (scalar === ScalarType.STRING || scalar === ScalarType.BYTES) return fc.oneof(numbers, fc.boolean(), containers);
    if (scalar === ScalarType.BOOL) return fc.oneof(fc.constantFrom<FuzzJson>("true", "false", "yes", "maybe", 0, 1, 2, "1", "on"), containers);
    return fc.oneof(strings, fc.boolean(), containers);
  }

  /** Edges: just outside the bounds, numbers no double holds, strings that break things. */
  boundary(field: DescField): fc.Arbitrary<FuzzJson> {
    const rule = ruleOf(field);
    const scalar = field.fieldKind === "scalar" || field.fieldKind === "list" ? field.scalar : undefined;
    const edges: FuzzJson[] = [];
    if (rule.ge !== undefined) edges.push(new RawJson((rule.ge - 1n).toString()), new RawJson(`${rule.ge}.5`));
    if (rule.le !== undefined) edges.push(new RawJson((rule.le + 1n).toString()));
    if (rule.literal.length > 0) edges.push(...rule.literal.map((l) => l.toUpperCase()), ...rule.literal.map((l) => ` ${l}`), "");
    const strings = fc.oneof(fc.constantFrom(...NASTY_STRINGS), fc.constantFrom(...RAW_STRINGS));
    const base = scalar === ScalarType.STRING || scalar === ScalarType.BYTES || field.fieldKind === "message" ? strings : extremeNumberArb;
    const fieldShaped = field.fieldKind === "list" ? base.map((v): FuzzJson => [v]) : base;
    return edges.length > 0 ? fc.oneof(fc.constantFrom(...edges), fieldShaped, extremeNumberArb) : fc.oneof(fieldShaped, extremeNumberArb);
  }

  /** Big values: a 1 MiB string (rarely), thousands of items, thousands of keys. */
  huge(field: DescField): fc.Arbitrary<FuzzJson> {
    return fc.oneof(
      { arbitrary: fc.constant<FuzzJson>(LONG_STRING), weight: 4 },
      { arbitrary: fc.constant<FuzzJson>(ONE_MIB_STRING), weight: 1 },
      { arbitrary: fc.integer({ min: 1_000, max: 20_000 }).map((n): FuzzJson => new RawJson(`[${Array.from({ length: n }, (_, i) => i % 7).join(",")}]`)), weight: 2 },
      { arbitrary: fc.integer({ min: 500, max: 5_000 }).map((n): FuzzJson => new RawJson(`{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(",")}}`)), weight: 2 },
      { arbitrary: fc.constant<FuzzJson>(field.fieldKind === "list" ? Array.from({ length: 150 }, () => ({})) : [LONG_STRING]), weight: 1 },
    );
  }

  /** A plausible query value: always for a required field, sometimes for an optional one. */
  plausibleQuery(field: DescField): fc.Arbitrary<string[]> {
    const value = this.right(field, "plausible", 3).map((v) => [queryText(v)]);
    return ruleOf(field).required ? value : fc.oneof({ arbitrary: fc.constant<string[]>([]), weight: 3 }, { arbitrary: value, weight: 1 });
  }

  /** A query-string value for a field not bound by the path or the body (one or more values). */
  query(field: DescField): fc.Arbitrary<string[]> {
    const rule = ruleOf(field);
    const one = (arb: fc.Arbitrary<FuzzJson>) => arb.map((v) => [queryText(v)]);
    return fc.oneof(
      { arbitrary: one(this.right(field, "valid", 3)), weight: 8 },
      { arbitrary: fc.constantFrom<string[]>(["abc"], ["1.5"], ["true"], ["-1"], ["0"], ["1e309"], ["-1e309"], ["18446744073709551616"], ["9223372036854775808"], ["2147483648"], [" 5"], ["5 "], ["0x10"], ["１"], ["null"]), weight: 4 },
      { arbitrary: fc.constant<string[]>([""]), weight: 2 },
      { arbitrary: one(this.boundary(field)), weight: 2 },
      { arbitrary: fc.constantFrom<string[]>([LONG_STRING], ["y".repeat(9_000)]), weight: rule.required ? 0 : 1 },
      { arbitrary: fc.array(fc.oneof(anyStringArb, fc.integer().map(String)), { minLength: 2, maxLength: 3 }), weight: 1 },
      { arbitrary: fc.constantFrom<string[]>(["%ZZ"], ["%"], ["%C0%AE"], ["%E0%A4%A"]).map((v) => v.map((s) => RAW_QUERY_PREFIX + s)), weight: 1 },
    );
  }
}

/** A query value that must go into the target as is, without percent-encoding. */
export const RAW_QUERY_PREFIX = "\u0001raw:";

function queryText(value: FuzzJson): string {
  if (typeof value === "string") return value;
  if (value instanceof RawJson) return value.text.replace(/^"(.*)"$/s, "$1");
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  return JSON.stringify(value);
}

/**
 * Chat completions stay cheap: a body that may reach the engine gets a small max_tokens most of
 * the time (a few get a larger or no limit), at most two choices and few forced tokens.
 */
export function cheapenChat(body: FuzzJson, budget: "small" | "medium" | "free", tokens: number): FuzzJson {
  if (!isFuzzObject(body)) return body;
  const out = { ...body };
  const isValidInt = (v: FuzzJson | undefined) => typeof v === "number" && Number.isInteger(v) && v >= 1;
  const limit = budget === "small" ? Math.min(tokens, 4) : budget === "medium" ? Math.min(8 + tokens, 64) : 256;
  for (const name of ["max_tokens", "max_completion_tokens"]) {
    const v = out[name];
    if (budget !== "free" && (v === undefined || v === null || isValidInt(v))) out[name] = limit;
    else if (isValidInt(v) && (v as number) > limit) out[name] = limit;
  }
  if (isValidInt(out.n) && (out.n as number) > 2) out.n = 2;
  if (isValidInt(out.min_tokens) && (out.min_tokens as number) > 8) out.min_tokens = 8;
  if (isValidInt(out.prompt_logprobs) && (out.prompt_logprobs as number) > 20) out.prompt_logprobs = 20;
  return out;
}

// --- Well-typed protobuf messages (init shapes) for the Connect and gRPC clients. -----------------

export type Init = { [key: string]: unknown };

/** Well-typed random messages: every value fits its field's type, the content is adversarial. */
export class InitGen {
  private cache = new Map<string, fc.Arbitrary<Init>>();
  constructor(readonly pools: Pools) {}

  message(desc: DescMessage, depth = 0): fc.Arbitrary<Init> {
    const key = `${desc.typeName}|${depth}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    let arb: fc.Arbitrary<Init>;
    if (depth > 3) arb = fc.constant({});
    else {
      const parts: fc.Arbitrary<[string, unknown] | null>[] = [];
      for (const member of desc.members) {
        if (member.kind === "oneof") {
          const cases = member.fields.map((f) => this.value(f, depth).map((value): [string, unknown] => [member.localName, { case: f.localName, value }]));
          parts.push(fc.oneof({ arbitrary: fc.constant(null), weight: 1 }, { arbitrary: fc.oneof(...cases), weight: 3 }));
        } else {
          const rule = ruleOf(member);
          const value = this.value(member, depth).map((v): [string, unknown] => [member.localName, v]);
          parts.push(fc.oneof({ arbitrary: fc.constant(null), weight: rule.required ? 1 : 4 }, { arbitrary: value, weight: rule.required ? 6 : 3 }));
        }
      }
      arb = fc.tuple(...parts).map((pairs) => {
        const out: Init = {};
        for (const pair of pairs) if (pair) out[pair[0]] = pair[1];
        return out;
      });
    }
    this.cache.set(key, arb);
    return arb;
  }

  private value(field: DescField, depth: number): fc.Arbitrary<unknown> {
    switch (field.fieldKind) {
      case "scalar":
        return this.scalar(field.scalar, field.name, ruleOf(field));
      case "enum":
        return fc.constantFrom(...field.enum.values.map((v) => v.number));
      case "message":
        return this.message(field.message, depth + 1);
      case "list": {
        const item: fc.Arbitrary<unknown> =
          field.listKind === "scalar" ? this.scalar(field.scalar, field.name, ruleOf(field)) : field.listKind === "enum" ? fc.constant(0) : this.message(field.message, depth + 1);
        return fc.array(item, { maxLength: depth > 1 ? 1 : 3 });
      }
      case "map": {
        const keyArb: fc.Arbitrary<string | number | bigint | boolean> = intRange(field.mapKey)
          ? fc.integer({ min: -5, max: 1000 })
          : field.mapKey === ScalarType.BOOL
            ? fc.boolean()
            : anyStringArb;
        const valueArb: fc.Arbitrary<unknown> =
          field.mapKind === "scalar" ? this.scalar(field.scalar, field.name, ruleOf(field)) : field.mapKind === "enum" ? fc.constant(0) : this.message(field.message, depth + 1);
        return fc.array(fc.tuple(keyArb, valueArb), { maxLength: 3 }).map((entries) => Object.fromEntries(entries.map(([k, v]) => [String(k), v])));
      }
    }
  }

  private scalar(scalar: ScalarType, name: string, rule: Rule): fc.Arbitrary<unknown> {
    const range = intRange(scalar);
    if (range) {
      const min = rule.ge !== undefined ? maxBig(rule.ge, range.min) : range.min;
      const max = rule.le !== undefined ? minBig(rule.le, range.max) : range.max;
      const n = fc.oneof(
        { arbitrary: fc.bigInt({ min: maxBig(min, -3n), max: minBig(max, 12n) }), weight: 5 },
        { arbitrary: fc.bigInt({ min: range.min, max: range.max }), weight: 2 },
        { arbitrary: fc.constantFrom(range.min, range.max, min, max, min - 1n < range.min ? range.min : min - 1n, max + 1n > range.max ? range.max : max + 1n), weight: 2 },
      );
      return range.is64 ? n : n.map(Number);
    }
    if (isFloat(scalar)) return fc.oneof({ arbitrary: fc.double({ min: -2, max: 2, noNaN: true }), weight: 4 }, { arbitrary: fc.double(), weight: 1 });
    switch (scalar) {
      case ScalarType.BOOL:
        return fc.boolean();
      case ScalarType.BYTES:
        return fc.uint8Array({ maxLength: 64 });
      default: {
        if (rule.literal.length > 0) return fc.oneof({ arbitrary: fc.constantFrom(...rule.literal), weight: 4 }, { arbitrary: anyStringArb, weight: 1 });
        const hint = jsonHint(name, this.pools);
        // Hints of list or object fields give no strings; those values become the field name.
        const strings = hint ? hint.map((v) => (typeof v === "string" ? v : name)) : undefined;
        return strings ? fc.oneof({ arbitrary: strings, weight: 4 }, { arbitrary: anyStringArb, weight: 1 }) : anyStringArb;
      }
    }
  }
}

/** The typed twin of cheapenChat: max tokens small, at most two choices. */
export function cheapenChatInit(init: Init, tokens: number): Init {
  const out: Init = { ...init, maxTokens: Math.max(1, Math.min(tokens, 4)) };
  delete out.maxCompletionTokens;
  if (typeof out.n === "number" && out.n > 2) out.n = 2;
  if (typeof out.minTokens === "number" && out.minTokens > 4) out.minTokens = 4;
  return out;
}
