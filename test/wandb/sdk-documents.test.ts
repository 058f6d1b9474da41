// Every GraphQL document the wandb SDK 0.25.0 sends for the supported operations (captured in
// test/wandb/sdk-documents/, one per file) must validate against the served schema and pass the
// server's default query limits (services/wandb/query-limits.ts): aliases, fields, depth,
// introspection and cost, with its required variables filled in and its list pages at their
// largest.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, validate, type GraphQLSchema } from "graphql";
import { describe, expect, it } from "vitest";
import { servedSchema } from "../../services/wandb/graphql.js";
import { checkDocument, costOf, DEFAULT_QUERY_LIMITS, selectionDepth } from "../../services/wandb/query-limits.js";
import { sampleVariables } from "./sample-variables.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixturesDir = join(here, "sdk-documents");

const fixtures: string[] = readdirSync(fixturesDir)
  .filter((file) => file.endsWith(".graphql"))
  .sort();

describe("wandb SDK 0.25.0 GraphQL documents", () => {
  const schema: GraphQLSchema = servedSchema();
  const costs = new Map<string, number>();

  it("has fixtures", () => {
    expect(fixtures.length).toBeGreaterThan(0);
  });

  for (const file of fixtures) {
    it(file, () => {
      const source = readFileSync(join(fixturesDir, file), "utf8");
      const document = parse(source);
      const errors = validate(schema, document).map((error) => error.message);
      expect(errors).toEqual([]);
      expect(selectionDepth(document)).toBeLessThanOrEqual(DEFAULT_QUERY_LIMITS.maxDepth);
      expect(() => checkDocument(document, DEFAULT_QUERY_LIMITS)).not.toThrow();
      const cost = costOf(schema, document, sampleVariables(schema, document), null, DEFAULT_QUERY_LIMITS);
      expect(cost).toBeGreaterThan(0);
      costs.set(file, cost);
    });
  }

  it("leaves headroom: the costliest document is at most 40% of the per-query limit", () => {
    const costliest = Math.max(...costs.values());
    expect(costs.size).toBe(fixtures.length);
    expect(costliest).toBeLessThanOrEqual(0.4 * DEFAULT_QUERY_LIMITS.maxCost);
  });
});
