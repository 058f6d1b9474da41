// The GraphQL limits as units (services/wandb/query-limits.ts, cost-budget.ts, field-limits.ts):
// each limit refuses just past its bound and not at it, costs follow the page sizes asked for,
// and the cost table names fields that exist.
import { parse } from "graphql";
import { describe, expect, it } from "vitest";
import { CostBudget } from "../../services/wandb/cost-budget.js";
import { checkBytes, FieldTooLarge, tailWithin } from "../../services/wandb/field-limits.js";
import { servedSchema } from "../../services/wandb/graphql.js";
import { MAX_HISTORY_SAMPLES } from "../../services/wandb/history-sampling.js";
import { BOUNDED_LISTS, checkDocument, costOf, DATABASE_FIELD_WEIGHT, DATABASE_FIELDS, DEFAULT_QUERY_LIMITS, MAX_PAGE, QueryRefused, ROW_FIELDS, type QueryLimits } from "../../services/wandb/query-limits.js";

const limits: QueryLimits = { ...DEFAULT_QUERY_LIMITS };
const refusal = (run: () => unknown): string | null => {
  try {
    run();
    return null;
  } catch (error) {
    if (error instanceof QueryRefused) return error.code;
    throw error;
  }
};
const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: viewer { id }`).join(" ")} }`;

describe("GraphQL document limits", () => {
  it("counts aliases, including those in fragments", () => {
    expect(refusal(() => checkDocument(parse(aliased(30)), limits))).toBeNull();
    expect(refusal(() => checkDocument(parse(aliased(31)), limits))).toBe("ALIAS_LIMIT");
    expect(refusal(() => checkDocument(parse(aliased(400)), limits))).toBe("ALIAS_LIMIT");
    const inFragment = `{ ...F } fragment F on Query { ${Array.from({ length: 31 }, (_, i) => `b${i}: viewer { id }`).join(" ")} }`;
    expect(refusal(() => checkDocument(parse(inFragment), limits))).toBe("ALIAS_LIMIT");
  });

  it("counts written field selections", () => {
    const fields = (n: number) => `{ viewer { ${"id ".repeat(n - 1)} } }`;
    expect(refusal(() => checkDocument(parse(fields(500)), limits))).toBeNull();
    expect(refusal(() => checkDocument(parse(fields(501)), limits))).toBe("FIELD_LIMIT");
  });

  it("bounds depth, fragments expanded, and refuses fragment cycles", () => {
    const nested = (n: number) => `{ project(name: "p") { artifact(name: "x") { ${"artifactSequence { latestArtifact { ".repeat(n)}id${" } }".repeat(n)} } } }`;
    expect(refusal(() => checkDocument(parse(nested(6)), limits))).toBeNull(); // 3 + 12 + 1 = 16 levels
    expect(refusal(() => checkDocument(parse(nested(7)), limits))).toBe("DEPTH_LIMIT");
    expect(refusal(() => checkDocument(parse("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }"), limits))).toBe("DEPTH_LIMIT");
  });

  it("serves __type lookups by default, __schema only when full, neither when off; __typename always", () => {
    const type = parse(`{ __type(name: "Run") { fields { name } } }`);
    const schema = parse(`{ __schema { types { name } } }`);
    const typename = parse(`{ __typename viewer { __typename } }`);
    expect(refusal(() => checkDocument(type, limits))).toBeNull();
    expect(refusal(() => checkDocument(schema, limits))).toBe("INTROSPECTION_DISABLED");
    expect(refusal(() => checkDocument(schema, { ...limits, introspection: "full" }))).toBeNull();
    expect(refusal(() => checkDocument(type, { ...limits, introspection: "off" }))).toBe("INTROSPECTION_DISABLED");
    expect(refusal(() => checkDocument(typename, { ...limits, introspection: "off" }))).toBeNull();
  });
});

describe("GraphQL cost", () => {
  const schema = servedSchema();
  const cost = (query: string, variables: Record<string, unknown> = {}, max = Infinity) => costOf(schema, parse(query), variables, null, { ...limits, maxCost: max });
  const files = (first: string) => `query ($first: Int) { artifact(id: "x") { files(first: ${first}) { edges { node { name url } } } } }`;

  it("multiplies a list page's selections by the page asked for, the largest page when none is", () => {
    // artifact (a lookup) + files (1) + page * (edges 1 + node 1 + name 1 + url 1)
    expect(cost(files("10"))).toBe(DATABASE_FIELD_WEIGHT + 1 + 10 * 4);
    expect(cost(files("$first"), { first: 50 })).toBe(DATABASE_FIELD_WEIGHT + 1 + 50 * 4);
    expect(cost(files("$first"))).toBe(DATABASE_FIELD_WEIGHT + 1 + MAX_PAGE * 4);
    expect(cost(files("1000000"))).toBe(DATABASE_FIELD_WEIGHT + 1 + MAX_PAGE * 4);
  });

  it("nests multipliers, counts each spread of a fragment, honours @skip, and refuses over the limit", () => {
    const nested = `{ project(name: "p") { artifactCollection(name: "c") { artifacts(first: 100) { edges { node { files(first: 100) { edges { node { name } } } } } } } } }`;
    expect(cost(nested)).toBeGreaterThan(100 * 100 * 3);
    expect(() => cost(nested, {}, 25_000)).toThrow(QueryRefused);
    const spread = `{ ...F ...F a: viewer { ...G } } fragment F on Query { viewer { id } } fragment G on User { id name }`;
    expect(cost(spread)).toBe(2 * 2 + 3);
    expect(cost(`query ($s: Boolean!) { viewer @skip(if: $s) { id } }`, { s: true })).toBe(0);
    expect(cost(`query ($s: Boolean!) { viewer @skip(if: $s) { id } }`, { s: false })).toBe(2);
  });

  it("weighs mutations as lookups, per item where they do one per item", () => {
    const specs = (n: number) => Array.from({ length: n }, (_, i) => ({ artifactID: "a", name: `f${i}`, md5: "m" }));
    const q = `mutation ($input: CreateArtifactFilesInput!) { createArtifactFiles(input: $input) { files { totalCount } } }`;
    expect(cost(q, { input: { storageLayout: "V2", artifactFiles: specs(1) } })).toBe(DATABASE_FIELD_WEIGHT + 2);
    expect(cost(q, { input: { storageLayout: "V2", artifactFiles: specs(40) } })).toBe(40 * DATABASE_FIELD_WEIGHT + 2);
  });

  it("adds one per history row a read may return (samples, default 500, at most 10,000)", () => {
    const run = (field: string) => `query ($specs: [JSONString!]!, $samples: Int) { project(name: "p") { run(name: "r") { ${field} } } }`;
    // project (1) + run (a lookup) + the history field (a lookup) + its rows
    const base = 1 + 2 * DATABASE_FIELD_WEIGHT;
    expect(cost(run("history(samples: 20)"), { specs: [] })).toBe(base + 20);
    expect(cost(run("history"), { specs: [] })).toBe(base + 500);
    expect(cost(run("history(samples: $samples)"), { specs: [], samples: 10 ** 9 })).toBe(base + MAX_HISTORY_SAMPLES);
    const specs = [JSON.stringify({ keys: ["loss"], samples: 100 }), JSON.stringify({ keys: ["acc"] }), "not json"];
    expect(cost(run("sampledHistory(specs: $specs)"), { specs })).toBe(base + 100 + 500 + 500);
    expect(cost(run(`parquetHistory(liveKeys: ["_step"]) { parquetUrls liveData }`), { specs: [] })).toBe(base + 2);
  });

  it("multiplies a bounded list without pages by its bound", () => {
    const usedBy = `{ artifact(id: "x") { usedBy { edges { node { name } } } } }`;
    // artifact, usedBy (lookups) + bound * (edges + node + name)
    expect(cost(usedBy)).toBe(2 * DATABASE_FIELD_WEIGHT + (BOUNDED_LISTS["Artifact.usedBy"] ?? 0) * 3);
  });

  it("refuses variables that do not fit the operation as a GraphQL error", () => {
    expect(() => cost(files("$first"), { first: "many" })).toThrow(/Int cannot represent/);
  });

  it("names only fields the schema has", () => {
    for (const name of [...DATABASE_FIELDS, ...Object.keys(ROW_FIELDS), ...Object.keys(BOUNDED_LISTS)]) {
      const [type, field] = name.split(".") as [string, string];
      const found = schema.getType(type);
      expect(found && "getFields" in found ? Object.keys(found.getFields()) : [], name).toContain(field);
    }
  });
});

describe("per-entity cost budget", () => {
  it("spends, refuses with the wait until it refills, and keeps entities apart", () => {
    const budget = new CostBudget({ capacity: 1000, windowMs: 10_000 });
    expect(budget.take("a", 600, 0)).toEqual({ ok: true });
    expect(budget.take("a", 600, 0)).toEqual({ ok: false, retryAfterSeconds: 2 }); // 200 missing at 0.1 per ms
    expect(budget.take("b", 1000, 0)).toEqual({ ok: true });
    expect(budget.take("a", 600, 2_000)).toEqual({ ok: true });
    expect(budget.take("a", 1, 2_000)).toMatchObject({ ok: false });
  });
});

describe("field sizes", () => {
  it("refuses past the limit in UTF-8 bytes, and keeps a bounded tail with the newest line", () => {
    expect(() => checkBytes("x", "é".repeat(50), 100)).not.toThrow();
    expect(() => checkBytes("x", "é".repeat(51), 100)).toThrow(FieldTooLarge);
    expect(tailWithin(["aaaa", "bb", "cc", "dddddd"], 3, 8)).toEqual(["cc", "dddddd"]);
    expect(tailWithin(["aaaa", "bb", "cc", "dddddd"], 3, 7)).toEqual(["dddddd"]);
    expect(tailWithin(["aaaa", "bb", "cc", "d"], 3, 8)).toEqual(["bb", "cc", "d"]);
    expect(tailWithin(["x".repeat(20)], 3, 8)).toEqual(["x".repeat(20)]);
  });
});
