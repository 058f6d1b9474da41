// A run's history as W&B's `Run` fields answer it, from the rows kept whole (run-history.ts):
// - `history(samples, minStep, maxStep)`: rows as the SDK logged them (JSON text), steps in
//   [minStep, maxStep), sampled to `samples` (run.history(); wandb 0.25's scan_history pages;
//   wandb-core's live pages);
// - `sampledHistory(specs)`: per spec {keys, samples, minStep, maxStep}, the rows that hold every
//   key, with just those keys, steps in [minStep, maxStep] (W&B counts maxStep in);
// - `parquetHistory(liveKeys)`: signed URLs of parquet files of the rows (history-segments.ts,
//   parquet-history.ts) and the rows not in them ("live", with just `liveKeys`);
// - `historyKeys`: the keys logged and the last step (history-keys.ts).
import { badRequest } from "../core/errors.js";
import { parseHistoryRow, stepOf, type HistoryRow } from "./history-json.js";
import { historyKeysAnswer, parseKeyTypeCounts } from "./history-keys.js";
import { evenlySpaced, samplesOf } from "./history-sampling.js";
import { historySegments } from "./history-segments.js";
import type { ResolverDeps } from "./resolver-deps.js";
import type { HistoryLine } from "./run-history.js";
import type { WandbRun } from "./wandb-runs.js";

/** Live rows answered at most (wandb-core only needs the first live step). */
export const MAX_LIVE_ROWS = 10_000;

type Step = number | null | undefined;

/** A step bound as given (Int64 is a JSON number; anything else, e.g. junk variables, is no bound). */
const stepBound = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? Math.trunc(value) : null);

export function runHistoryFields(deps: ResolverDeps, found: WandbRun) {
  const history = deps.runs.history;
  const runId = found.run._id;

  /** Up to `samples` lines with steps in the bounds, spread evenly. */
  const sampledLines = async (samples: number, minStep: Step, maxStep: Step, maxInclusive: boolean): Promise<HistoryLine[]> => {
    const bounds = await history.bounds(runId, minStep ?? null, maxStep ?? null, maxInclusive);
    if (!bounds) return [];
    const count = bounds.last - bounds.first + 1;
    const lines = count <= samples ? await history.range(runId, bounds.first, bounds.last + 1) : await history.at(runId, evenlySpaced(count, samples).map((offset) => bounds.first + offset));
    return lines.filter((line) => line.step !== null);
  };

  return {
    historyKeys: () => {
      const state = found.state;
      const lastStep = state?.history_last_step ?? stepOf(parseHistoryRow(state?.history_tail.at(-1) ?? ""));
      return lastStep === null || lastStep === undefined ? null : historyKeysAnswer(parseKeyTypeCounts(state?.history_keys), lastStep);
    },

    history: async (args: { samples?: unknown; minStep?: unknown; maxStep?: unknown }) =>
      (await sampledLines(samplesOf(args.samples), stepBound(args.minStep), stepBound(args.maxStep), false)).map((line) => line.line),

    sampledHistory: async ({ specs }: { specs: readonly string[] }) => {
      const answers: HistoryRow[][] = [];
      for (const text of specs) answers.push(await sampled(found, deps, parseSpec(text)));
      return answers;
    },

    parquetHistory: async ({ liveKeys }: { liveKeys: readonly string[] }) => {
      const lineCount = found.state?.history_line_count ?? 0;
      const segments = historySegments(found.state?.history_exports ?? [], lineCount);
      if (segments !== null) {
        // A file of lines logged before rows were kept would be empty: left out.
        const stored = (await Promise.all(segments.map(async (segment) => ((await history.has(runId, segment.from, segment.to)) ? segment : null)))).filter((segment) => segment !== null);
        const parquetUrls = stored.map((segment) => {
          const token = deps.signer.sign({ k: "history", e: found.run.entity, p: found.run.project, r: runId, f: segment.from, t: segment.to, c: found.run.created_at.getTime() }, deps.transferTtlMs);
          return `${deps.baseUrl}/wandb/files/${token}/history-${segment.from}-${segment.to}.parquet`;
        });
        return { parquetUrls, liveData: [] };
      }
      // Every row is live: just their steps when that is all that is asked (wandb-core asks `_step`).
      if (liveKeys.every((key) => key === "_step")) return { parquetUrls: [], liveData: (await history.steps(runId, 0, MAX_LIVE_ROWS)).map((step) => ({ _step: step })) };
      const rows = (await history.range(runId, 0, MAX_LIVE_ROWS)).map((line) => parseHistoryRow(line.line)).filter((row): row is HistoryRow => row !== null);
      return { parquetUrls: [], liveData: rows.map((row) => pick(row, liveKeys)) };
    },
  };
}

interface SampleSpec {
  keys: string[];
  samples: number;
  minStep: Step;
  maxStep: Step;
}

function parseSpec(text: string): SampleSpec {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("each sampledHistory spec must be a JSON object {keys, samples, minStep, maxStep}");
  }
  const spec = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const keys = Array.isArray(spec.keys) ? spec.keys.filter((key): key is string => typeof key === "string") : [];
  if (keys.length === 0) throw badRequest("a sampledHistory spec needs `keys`: the history keys to return");
  return { keys, samples: samplesOf(spec.samples), minStep: stepBound(spec.minStep), maxStep: stepBound(spec.maxStep) };
}

/** The rows within the spec's steps that hold all its keys, with just those keys, spread evenly. */
async function sampled(found: WandbRun, deps: ResolverDeps, spec: SampleSpec): Promise<HistoryRow[]> {
  const bounds = await deps.runs.history.bounds(found.run._id, spec.minStep ?? null, spec.maxStep ?? null, true);
  if (!bounds) return [];
  const matching: HistoryRow[] = [];
  for await (const line of deps.runs.history.each(found.run._id, bounds.first, bounds.last)) {
    const row = parseHistoryRow(line.line);
    if (row && spec.keys.every((key) => row[key] !== undefined && row[key] !== null)) matching.push(pick(row, spec.keys));
  }
  return evenlySpaced(matching.length, spec.samples).map((index) => matching[index] as HistoryRow);
}

function pick(row: HistoryRow, keys: readonly string[]): HistoryRow {
  return Object.fromEntries(keys.filter((key) => key in row).map((key) => [key, row[key]]));
}
