// Which parquet files a run's history is served as. W&B exports history into parquet files and
// answers the rows not exported yet as "live" data; wandb-core caches each file by the run and
// its position in the list, so a file must never change once handed out. Here the rows logged up
// to each finish of the run (`history_exports`, run-state.ts) never change again: those are cut
// into files of at most PARQUET_ROWS rows, always at the same places. While rows past the last
// finish exist (the run is running, or crashed), every row is answered live instead: wandb-core
// would read a row twice if a page of steps reached both into a file and into live data.

/** Rows in one parquet file, at most. */
export const PARQUET_ROWS = 10_000;

export interface HistorySegment {
  /** First line number (inclusive). */
  from: number;
  /** Last line number, exclusive. */
  to: number;
}

/** The files of a run whose history has `lineCount` lines and finished at `exports`; null: answer live. */
export function historySegments(exports: readonly number[], lineCount: number, rowsPerFile = PARQUET_ROWS): HistorySegment[] | null {
  if (lineCount > (exports.at(-1) ?? 0)) return null;
  const segments: HistorySegment[] = [];
  let from = 0;
  for (const end of exports) {
    for (let start = from; start < end; start += rowsPerFile) segments.push({ from: start, to: Math.min(end, start + rowsPerFile) });
    from = Math.max(from, end);
  }
  return segments;
}
