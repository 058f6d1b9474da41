// `api.runs(path)`: a project's runs as W&B's `Project.runs` connection and `runCount`. The runs
// are those the W&B API made or touched (run-state.ts), newest first; a page's cursor is the
// position of its last run, as the other connections here (artifact-objects.ts `connection`).
import { unimplemented } from "../core/errors.js";
import { MAX_PAGE } from "./query-limits.js";
import type { ResolverDeps } from "./resolver-deps.js";
import { projectRef, runObject } from "./run-objects.js";

interface RunsArgs {
  /** JSONString: the SDK sends JSON text; junk variables may be anything. */
  filters?: unknown;
  after?: string | null;
  first?: number | null;
}

export function projectRunFields(deps: ResolverDeps, entity: string, project: string) {
  return {
    runCount: async ({ filters }: RunsArgs) => {
      refuseFilters(filters);
      return deps.runs.count(entity, project);
    },
    runs: async ({ filters, after, first }: RunsArgs) => {
      refuseFilters(filters);
      const start = after ? Number(after) + 1 : 0;
      const offset = Number.isSafeInteger(start) && start >= 0 ? start : 0;
      const limit = first && first > 0 ? Math.min(first, MAX_PAGE) : MAX_PAGE;
      const [page, total] = await Promise.all([deps.runs.list(entity, project, offset, limit), deps.runs.count(entity, project)]);
      return {
        totalCount: total,
        pageInfo: { endCursor: page.length > 0 ? String(offset + page.length - 1) : null, hasNextPage: offset + page.length < total },
        edges: page.map((found, index) => ({ node: runObject(deps, found, found.name, () => projectRef(found.run)), cursor: String(offset + index) })),
      };
    },
  };
}

/** W&B's run filters (a MongoDB-like query) are not served: an empty one is all there is. */
function refuseFilters(filters: unknown): void {
  if (filters === null || filters === undefined) return;
  if (typeof filters === "string" && /^\s*(\{\s*\})?\s*$/.test(filters)) return;
  throw unimplemented("filtering runs (api.runs(path, filters=...)); list them without filters");
}
