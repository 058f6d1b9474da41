// The parquet file behind a signed history URL (run-history-fields.ts hands them out): the rows
// of lines `f` to `t - 1` of the run, built when asked. The URL is bound to the run's creation
// time, so a run deleted and logged again under the same id answers 404, never its new rows.
import { notFound } from "../core/errors.js";
import { parseHistoryRow, type HistoryRow } from "./history-json.js";
import { historyParquet } from "./parquet-history.js";
import type { WandbRuns } from "./wandb-runs.js";

export async function historyFile(runs: WandbRuns, grant: Record<string, string | number>): Promise<{ size: number; chunks: AsyncIterable<Buffer> }> {
  const found = await runs.find(String(grant.e), String(grant.p), String(grant.r));
  if (!found || found.run._id !== grant.r || found.run.created_at.getTime() !== grant.c) throw notFound("the run this history URL was issued for no longer exists");
  const lines = await runs.history.range(found.run._id, Number(grant.f), Number(grant.t));
  const rows = lines.map((line) => parseHistoryRow(line.line)).filter((row): row is HistoryRow => row !== null);
  if (rows.length === 0) throw notFound("the history rows this URL was issued for are no longer stored");
  const file = Buffer.from(historyParquet(rows));
  return { size: file.byteLength, chunks: (async function* () { yield file; })() };
}
