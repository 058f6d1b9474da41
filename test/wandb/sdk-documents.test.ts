// Every GraphQL document each supported wandb SDK version sends for the supported operations
// (extracted from the SDK by test/wandb/sdk-documents/extract.py into sdk-documents/<version>/,
// one per file) must validate against the served schema and pass the server's default query
// limits (services/wandb/query-limits.ts): aliases, fields, depth, introspection and cost, with its
// required variables filled in and its list pages at their largest.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, validate, type GraphQLSchema } from "graphql";
import { describe, expect, it } from "vitest";
import { servedSchema } from "../../services/wandb/graphql.js";
import { checkDocument, costOf, DEFAULT_QUERY_LIMITS, selectionDepth } from "../../services/wandb/query-limits.js";
import { sampleVariables } from "./sample-variables.js";

const here = dirname(fileURLToPath(import.meta.url));
const documentsDir = join(here, "sdk-documents");
/** The SDK versions tested: the oldest (what ART pins) and the newest, and one between. */
const VERSIONS = ["0.25.0", "0.28.0", "0.31.0"];

describe("the wandb SDK versions' documents", () => {
  it("are there for every tested version, and only those", () => {
    const present = readdirSync(documentsDir).filter((entry) => statSync(join(documentsDir, entry)).isDirectory());
    expect(present.sort()).toEqual(VERSIONS);
  });
});

for (const version of VERSIONS) {
  const versionDir = join(documentsDir, version);
  const fixtures: string[] = readdirSync(versionDir)
    .filter((file) => file.endsWith(".graphql"))
    .sort();

  describe(`wandb SDK ${version} GraphQL documents`, () => {
    const schema: GraphQLSchema = servedSchema();
    const costs = new Map<string, number>();

    it("has the documents of every supported operation", () => {
      // Run lifecycle, history reads, artifact logging and reading: present in every version.
      for (const name of ["UpsertBucket", "Run", "Runs", "RunFullHistory", "RunHistoryKeys", "CreateArtifact", "CreateArtifactFiles", "CommitArtifact", "FetchArtifactManifest", "ArtifactCreatedBy"]) {
        expect(fixtures).toContain(`${name}.graphql`);
      }
    });

    for (const file of fixtures) {
      it(file, () => {
        const source = readFileSync(join(versionDir, file), "utf8");
        expect(source).toMatch(new RegExp(`^# Source \\(wandb v${version.replace(/\./g, "\\.")}\\): .+\\n# Sent by: .+`));
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
}
