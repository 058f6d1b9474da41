// `npm run imports`: the import graph of services/ as the layering rules read it (dependency-cruiser
// walks the TypeScript imports; this file only counts what breaks the rules in shared/ARCHITECTURE.md).
// The architecture test (test/architecture/imports.test.ts) asserts every count is zero.
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import { cruise, type ICruiseResult, type IModule } from "dependency-cruiser";

/** A top-level folder of services/ ("services/models/registry.ts" -> "models"). */
function folderOf(path: string): string | undefined {
  return /^services\/([^/]+)\//.exec(path)?.[1];
}

/** Folders that are not services: the kernel may be imported anywhere by path; the composition root and the gateway by nothing below them. */
const KERNEL = "core";
const ABOVE_SERVICES = new Set(["app", "gateway"]);

export interface ImportGraph {
  /** Imports from a file under services/ (outside gateway/ and app/) into gateway/. */
  intoGateway: string[];
  /** Imports from outside app/ into app/. */
  intoApp: string[];
  /** Imports of another service's internals instead of its face (`services/<name>/index.ts`). */
  pastFaces: string[];
  /** File-level import cycles, each as its files in order. */
  fileCycles: string[][];
  /** Folder-level loops: strongly connected groups of top-level folders. */
  folderLoops: string[][];
  /**
   * Loops between folders at any depth (services/training/trainer <-> services/training/trainer/rl).
   * A service's face (services/<name>/index.ts) re-exports from its subfolders without using them,
   * so its edges do not count.
   */
  nestedLoops: string[][];
  /** The folder graph: folder -> folders it imports. */
  folderEdges: Map<string, Set<string>>;
}

/** Reads the graph of every .ts file under services/ (type-only imports included: they tie folders too). */
export async function importGraph(root = "services"): Promise<ImportGraph> {
  const result = await cruise([root], {
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules|^gen/" },
    exclude: { path: "\\.test\\.ts$|node_modules" },
    moduleSystems: ["es6"],
  }, undefined, { tsConfig: { fileName: "tsconfig.json" } });
  const output = (result.output as ICruiseResult).modules.filter((m) => m.source.startsWith(`${root}/`) && m.source.endsWith(".ts"));
  return analyse(output);
}

function analyse(modules: IModule[]): ImportGraph {
  const graph: ImportGraph = { intoGateway: [], intoApp: [], pastFaces: [], fileCycles: [], folderLoops: [], nestedLoops: [], folderEdges: new Map() };
  const fileEdges = new Map<string, string[]>();
  const directoryEdges = new Map<string, Set<string>>();
  for (const module of modules) {
    const from = module.source;
    const fromFolder = folderOf(from);
    const targets = module.dependencies.map((d) => d.resolved).filter((to) => folderOf(to) !== undefined);
    fileEdges.set(from, targets);
    if (from !== `services/${fromFolder}/index.ts`) {
      for (const to of targets) {
        if (dirname(to) === dirname(from)) continue;
        const edges = directoryEdges.get(dirname(from)) ?? new Set<string>();
        edges.add(dirname(to));
        directoryEdges.set(dirname(from), edges);
      }
    }
    for (const to of targets) {
      const toFolder = folderOf(to)!;
      const edge = `${from} -> ${to}`;
      if (toFolder === "gateway" && !ABOVE_SERVICES.has(fromFolder ?? "")) graph.intoGateway.push(edge);
      if (toFolder === "app" && fromFolder !== "app") graph.intoApp.push(edge);
      if (fromFolder === toFolder || fromFolder === undefined) continue;
      if (toFolder !== KERNEL && to !== `services/${toFolder}/index.ts`) graph.pastFaces.push(edge);
      const edges = graph.folderEdges.get(fromFolder) ?? new Set<string>();
      edges.add(toFolder);
      graph.folderEdges.set(fromFolder, edges);
    }
  }
  graph.fileCycles = stronglyConnected(new Map([...fileEdges].map(([k, v]) => [k, new Set(v)]))).filter((group) => group.length > 1);
  graph.folderLoops = stronglyConnected(graph.folderEdges).filter((group) => group.length > 1);
  graph.nestedLoops = stronglyConnected(directoryEdges).filter((group) => group.length > 1);
  return graph;
}

/** Tarjan's strongly connected components. */
function stronglyConnected(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of edges.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      groups.push(group.sort());
    }
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return groups;
}

async function main(): Promise<void> {
  const graph = await importGraph();
  const list = (title: string, items: string[]) => {
    console.log(`${title}: ${items.length}`);
    for (const item of items) console.log(`  ${item}`);
  };
  list("imports from services into gateway/", graph.intoGateway);
  list("imports into app/ from below", graph.intoApp);
  list("imports past a service's face (index.ts)", graph.pastFaces);
  list("file cycles", graph.fileCycles.map((c) => c.join(" <-> ")));
  list("folder loops", graph.folderLoops.map((c) => c.join(" <-> ")));
  list("loops between nested folders", graph.nestedLoops.map((c) => c.join(" <-> ")));
  console.log("folder graph:");
  for (const [from, to] of [...graph.folderEdges].sort()) console.log(`  ${from} -> ${[...to].sort().join(", ")}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
