// The layering of shared/ARCHITECTURE.md ("How the code holds together"), read from the real
// import graph of services/ (dependency-cruiser): `npm run imports` prints the same counts with
// the offending imports.
import { beforeAll, describe, expect, it } from "vitest";
import { importGraph, type ImportGraph } from "../../scripts/import-graph.js";

describe("import graph of services/", () => {
  let graph: ImportGraph;
  beforeAll(async () => {
    graph = await importGraph();
  }, 60_000);

  it("reads the whole tree (the rules below are not vacuous)", () => {
    expect(graph.folderEdges.get("app")?.size ?? 0).toBeGreaterThanOrEqual(8);
    expect([...graph.folderEdges.keys()]).toEqual(expect.arrayContaining(["inference", "models", "training", "wandb"]));
  });

  it("nothing below the gateway imports it, nothing imports the composition root", () => {
    expect(graph.intoGateway).toEqual([]);
    expect(graph.intoApp).toEqual([]);
  });

  it("other folders use a service only through its face (index.ts)", () => {
    expect(graph.pastFaces).toEqual([]);
  });

  it("has no file cycles and no loops between folders", () => {
    expect(graph.fileCycles).toEqual([]);
    expect(graph.folderLoops).toEqual([]);
    expect(graph.nestedLoops).toEqual([]);
  });
});
