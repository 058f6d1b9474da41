// Generated GraphQL documents for the W&B API fuzzer (test/gateway/fuzz-wandb.test.ts), from the
// served schema (services/wandb/schema.graphql): queries and mutations of real field names with
// random arguments (well typed, mistyped, out of range, variables declared or not), aliases,
// nesting, fragments and introspection; documents over the server's limits (hundreds of aliases,
// deep nesting, wide selections, costly pages); token soup; and junk variables. Each document is
// built from one generated seed with a small PRNG, so a fixed fast-check seed gives the same
// documents every run.
import fc from "fast-check";
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isUnionType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
} from "graphql";
import { NASTY_STRINGS } from "./fuzz-json.js";

export interface GraphqlCase {
  label: string;
  body: Buffer;
}

/** Names the documents use as argument values: the fuzz server's own objects and strangers. */
export interface GraphqlPools {
  entities: string[];
  projects: string[];
  runs: string[];
  artifactIds: string[];
}

class Rng {
  constructor(private state: number) {}
  next(): number {
    // mulberry32
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }
}

const INTS = [0, 1, -1, 10, 1000, 5000, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53];

export class GraphqlGen {
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly pools: GraphqlPools,
    /** The SDK's own documents, sent with generated variables. */
    private readonly fixtures: readonly string[],
  ) {}

  /** Every kind of case, weighted towards well-formed documents (they reach the resolvers). */
  cases(): fc.Arbitrary<GraphqlCase> {
    return fc.oneof(
      { weight: 6, arbitrary: fc.nat().map((seed) => this.typed(new Rng(seed))) },
      { weight: 2, arbitrary: fc.nat().map((seed) => this.overLimits(new Rng(seed))) },
      { weight: 2, arbitrary: fc.nat().map((seed) => this.fixture(new Rng(seed))) },
      { weight: 1, arbitrary: fc.nat().map((seed) => this.soup(new Rng(seed))) },
    );
  }

  private body(label: string, query: unknown, variables: unknown, operationName?: unknown): GraphqlCase {
    return { label, body: Buffer.from(JSON.stringify({ query, variables, ...(operationName !== undefined ? { operationName } : {}) })) };
  }

  /** A document of real fields with random arguments, maybe through variables. */
  private typed(rng: Rng): GraphqlCase {
    const mutation = rng.chance(0.35);
    const root = mutation ? this.schema.getMutationType() : this.schema.getQueryType();
    if (!root) throw new Error("the served schema has no root type");
    const declared: string[] = [];
    const variables: Record<string, unknown> = {};
    const fragments: string[] = [];
    const selection = this.selection(rng, root, 0, rng.int(1, 7), { declared, variables, fragments });
    if (rng.chance(0.2)) variables[`junk${rng.int(0, 9)}`] = this.junkValue(rng, 0); // undeclared
    const head = `${mutation ? "mutation" : "query"}${rng.chance(0.5) ? ` Op${rng.int(0, 3)}` : ""}${declared.length > 0 ? `(${declared.join(", ")})` : ""}`;
    return this.body(mutation ? "typed mutation" : "typed query", `${head} { ${selection} } ${fragments.join(" ")}`, rng.chance(0.05) ? this.junkValue(rng, 0) : variables, rng.chance(0.1) ? rng.pick(["Op0", "Op9", "", 7]) : undefined);
  }

  private selection(rng: Rng, type: GraphQLNamedType, depth: number, maxDepth: number, ctx: { declared: string[]; variables: Record<string, unknown>; fragments: string[] }): string {
    if (isUnionType(type)) return `__typename ${type.getTypes().map((member) => `... on ${member.name} { ${this.selection(rng, member, depth + 1, maxDepth, ctx)} }`).join(" ")}`;
    if (!isObjectType(type) && !isInterfaceType(type)) return "__typename";
    const fields = Object.values(type.getFields()) as GraphQLField<unknown, unknown>[];
    const parts: string[] = [];
    const count = rng.int(1, 4);
    for (let i = 0; i < count; i++) {
      const field = rng.pick(fields);
      const alias = rng.chance(0.15) ? `a${rng.int(0, 99)}: ` : "";
      const args = field.args.filter((arg) => isNonNullType(arg.type) ? !rng.chance(0.03) : rng.chance(0.5)).map((arg) => `${arg.name}: ${this.argument(rng, arg.type, ctx)}`);
      if (rng.chance(0.03)) args.push(`bogus${rng.int(0, 3)}: 1`);
      const named = getNamedType(field.type);
      let sub = "";
      if (isObjectType(named) || isInterfaceType(named) || isUnionType(named)) {
        sub = depth + 1 >= maxDepth ? " { __typename }" : ` { ${this.selection(rng, named, depth + 1, maxDepth, ctx)} }`;
        if (isInterfaceType(named) && rng.chance(0.3)) {
          const concrete = rng.pick(this.schema.getPossibleTypes(named));
          sub = ` { __typename ... on ${concrete.name} { ${this.selection(rng, concrete, depth + 2, maxDepth, ctx)} } }`;
        }
        if (isObjectType(named) && rng.chance(0.1)) {
          const name = `F${ctx.fragments.length}`;
          ctx.fragments.push(`fragment ${name} on ${named.name} { ${this.selection(rng, named, depth + 1, maxDepth, ctx)} }`);
          sub = ` { ...${name} }`;
        }
      } else if (rng.chance(0.02)) sub = " { id }"; // a selection on a scalar: invalid
      parts.push(`${alias}${field.name}${args.length > 0 ? `(${args.join(", ")})` : ""}${sub}`);
    }
    if (rng.chance(0.1)) parts.push(rng.pick(["__typename", `__type(name: "${rng.pick(["Run", "Query", "CreateArtifactInput", "Nope"])}") { name fields { name } inputFields { name } }`, "__schema { queryType { name } }"]));
    if (rng.chance(0.02)) parts.push("noSuchField");
    return parts.join(" ");
  }

  /** An argument: a literal (mostly of its type), or a declared variable with a value. */
  private argument(rng: Rng, type: GraphQLInputType, ctx: { declared: string[]; variables: Record<string, unknown> }): string {
    if (rng.chance(0.3)) {
      const name = `v${ctx.declared.length}`;
      const declaredType = rng.chance(0.9) ? typeName(type) : rng.pick(["String", "Int!", "[ID]", "Nope"]);
      ctx.declared.push(`$${name}: ${declaredType}`);
      if (!rng.chance(0.1)) ctx.variables[name] = rng.chance(0.85) ? this.value(rng, type, 0) : this.junkValue(rng, 0);
      return `$${name}`;
    }
    return rng.chance(0.9) ? literal(this.value(rng, type, 0), type) : rng.pick(["1", '"x"', "true", "null", "[1, 2]", '{a: 1}', "ENUM_VALUE", "-1.5e400"]);
  }

  /** A JSON value of an input type (out of range now and then). */
  private value(rng: Rng, type: GraphQLInputType, depth: number): unknown {
    if (isNonNullType(type)) return this.value(rng, type.ofType, depth);
    if (rng.chance(0.05)) return null;
    if (isListType(type)) return Array.from({ length: rng.chance(0.05) ? rng.int(50, 200) : rng.int(0, 3) }, () => this.value(rng, type.ofType, depth + 1));
    if (isEnumType(type)) return rng.pick(type.getValues()).value;
    if (isInputObjectType(type)) {
      if (depth > 4) return {};
      const out: Record<string, unknown> = {};
      for (const field of Object.values(type.getFields())) if (isNonNullType(field.type) || rng.chance(0.5)) out[field.name] = this.value(rng, field.type, depth + 1);
      return out;
    }
    if (isScalarType(type)) return this.scalar(rng, type.name);
    return null;
  }

  private scalar(rng: Rng, name: string): unknown {
    switch (name) {
      case "Int":
      case "Int64":
        return rng.pick(INTS);
      case "Float":
        return rng.pick([0, 0.5, -1e300, 1e308]);
      case "Boolean":
        return rng.chance(0.5);
      case "JSONString":
        return rng.pick(['{"a": 1}', "{}", "[]", "not json", JSON.stringify({ _wandb: { value: { t: 1 } }, lr: { value: 0.1 } }), JSON.stringify(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, { value: i }])))]);
      default:
        return this.name(rng);
    }
  }

  private name(rng: Rng): string {
    const { entities, projects, runs, artifactIds } = this.pools;
    const pool = rng.pick([entities, projects, runs, artifactIds, NASTY_STRINGS, ["", "latest", "v0", "data:v0", "data:latest", "x".repeat(300), "../..", "a:b:c"]]);
    return pool.length > 0 ? rng.pick(pool) : "x";
  }

  private junkValue(rng: Rng, depth: number): unknown {
    const kind = rng.int(0, depth > 3 ? 4 : 6);
    if (kind === 0) return null;
    if (kind === 1) return rng.pick(INTS);
    if (kind === 2) return rng.chance(0.5);
    if (kind === 3) return this.name(rng);
    if (kind === 4) return rng.pick(["$x", { $gt: "" }, "1e400"]);
    if (kind === 5) return Array.from({ length: rng.int(0, 4) }, () => this.junkValue(rng, depth + 1));
    return Object.fromEntries(Array.from({ length: rng.int(0, 4) }, (_, i) => [rng.pick(["input", "name", "first", "id", "__proto__", "constructor", `k${i}`]), this.junkValue(rng, depth + 1)]));
  }

  /** Documents past the limits: aliases, depth, width, cost, fragment blow-up, introspection. */
  private overLimits(rng: Rng): GraphqlCase {
    const kind = rng.int(0, 6);
    const entity = rng.pick(this.pools.entities);
    switch (kind) {
      case 0: {
        const n = rng.pick([31, 100, 400, 1000]);
        return this.body(`aliases x${n}`, `query { ${Array.from({ length: n }, (_, i) => `r${i}: project(name: "p", entityName: "${entity}") { run(name: "r${i}") { id historyTail } }`).join(" ")} }`, {});
      }
      case 1: {
        const n = rng.int(8, 40);
        return this.body(`depth ${2 * n}`, `query { project(name: "p") { artifact(name: "x") { ${"artifactSequence { latestArtifact { ".repeat(n)}id${" } }".repeat(n)} } } }`, {});
      }
      case 2:
        return this.body("wide", `query { viewer { ${"id name ".repeat(rng.int(260, 2000))} } }`, {});
      case 3: {
        const first = rng.pick([100, 1000, 100000]);
        return this.body("costly pages", `query { project(name: "p", entityName: "${entity}") { artifactCollection(name: "data") { artifacts(first: ${first}) { edges { node { files(first: ${first}) { edges { node { name url directUrl } } } } } } } } }`, {});
      }
      case 4: {
        // Each fragment spreads the previous twice: 2^n fields from a short document.
        const n = rng.int(10, 30);
        const fragments = Array.from({ length: n }, (_, i) => (i === 0 ? "fragment F0 on Query { viewer { id } }" : `fragment F${i} on Query { ...F${i - 1} ...F${i - 1} }`));
        return this.body(`fragment blow-up 2^${n}`, `query { ...F${n - 1} } ${fragments.join(" ")}`, {});
      }
      case 5:
        return this.body("full introspection", "query IntrospectionQuery { __schema { types { name kind fields(includeDeprecated: true) { name args { name type { name kind ofType { name kind ofType { name } } } } } } } }", {});
      default: {
        const specs = Array.from({ length: rng.pick([100, 3000]) }, (_, i) => ({ artifactID: rng.pick(this.pools.artifactIds.length > 0 ? this.pools.artifactIds : ["x"]), name: `f${i}`, md5: "m" }));
        return this.body("many artifact files", "mutation ($input: CreateArtifactFilesInput!) { createArtifactFiles(input: $input) { files { totalCount } } }", { input: { storageLayout: "V2", artifactFiles: specs } });
      }
    }
  }

  /** One of the SDK's documents with generated (often wrong) variables. */
  private fixture(rng: Rng): GraphqlCase {
    const query = rng.pick(this.fixtures);
    const names = [...query.matchAll(/\$([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => match[1] as string);
    const variables = Object.fromEntries([...new Set(names)].map((name) => [name, rng.chance(0.7) ? this.name(rng) : this.junkValue(rng, 0)]));
    return this.body("sdk document", query, variables);
  }

  /** Token soup: GraphQL punctuation, names and strings in random order, and other junk. */
  private soup(rng: Rng): GraphqlCase {
    const tokens = ["{", "}", "(", ")", "[", "]", ":", "...", "$v", "@skip(if: true)", "query", "mutation", "fragment F on Query", "viewer", "project", "run", '"s"', "1", "#c\n", "on", "=", "!", "|", "&", '"""block"""', "\\u0000"];
    const text = Array.from({ length: rng.int(1, 200) }, () => rng.pick(tokens)).join(rng.chance(0.5) ? " " : "");
    const query = rng.pick<unknown>([text, text, 42, null, ["query { viewer { id } }"], { query: "x" }]);
    return this.body("soup", query, rng.chance(0.7) ? this.junkValue(rng, 0) : {});
  }
}

function typeName(type: GraphQLInputType): string {
  if (isNonNullType(type)) return `${typeName(type.ofType)}!`;
  if (isListType(type)) return `[${typeName(type.ofType)}]`;
  return (type as GraphQLNamedType).name;
}

/** A JSON value as a GraphQL literal of `type` (enums bare, input object keys unquoted). */
function literal(value: unknown, type: GraphQLInputType): string {
  if (value === null || value === undefined) return "null";
  if (isNonNullType(type)) return literal(value, type.ofType);
  if (isListType(type)) return Array.isArray(value) ? `[${value.map((item) => literal(item, type.ofType)).join(", ")}]` : literal(value, type.ofType);
  if (isEnumType(type) && typeof value === "string") return value;
  if (isInputObjectType(type) && typeof value === "object") {
    const fields = type.getFields();
    return `{${Object.entries(value as Record<string, unknown>).map(([key, item]) => `${key}: ${fields[key] ? literal(item, fields[key].type) : JSON.stringify(item)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

