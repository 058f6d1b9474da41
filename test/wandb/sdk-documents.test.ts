// Every GraphQL document the wandb SDK 0.25.0 sends for the supported operations (captured in
// test/wandb/sdk-documents/, one per file) must validate against the served schema, and stay
// within the server's nesting limit.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, validate, type GraphQLSchema } from "graphql";
import { describe, expect, it } from "vitest";
import { MAX_DEPTH, selectionDepth, servedSchema } from "../../services/wandb/graphql.js";

const here = dirname(fileURLToPath(import.meta.url));
const fixturesDir = join(here, "sdk-documents");

const fixtures: string[] = readdirSync(fixturesDir)
  .filter((file) => file.endsWith(".graphql"))
  .sort();

describe("wandb SDK 0.25.0 GraphQL documents", () => {
  const schema: GraphQLSchema = servedSchema();

  it("has fixtures", () => {
    expect(fixtures.length).toBeGreaterThan(0);
  });

  for (const file of fixtures) {
    it(file, () => {
      const source = readFileSync(join(fixturesDir, file), "utf8");
      const document = parse(source);
      const errors = validate(schema, document).map((error) => error.message);
      expect(errors).toEqual([]);
      expect(selectionDepth(document)).toBeLessThanOrEqual(MAX_DEPTH);
    });
  }
});
