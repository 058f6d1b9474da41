// Sizes of what the W&B API stores, checked before anything is stored. A run's W&B record (config,
// summary, the last history and event lines: run-state.ts) is one database document, and a
// document holds at most 16 MiB; past that the database refuses the write and the request failed
// with a 500. The limits keep every record well inside it and sit far above what wandb users log:
// W&B itself recommends a config under 10 MB, single logged values under 1 MB and under 10,000
// distinct metrics per project (docs.wandb.ai, "Experiments limits and performance").
import { ApiError } from "../core/errors.js";

const MiB = 1024 * 1024;

export const FIELD_LIMITS = {
  /** A run's config (`upsertBucket(config:)`), JSON text. */
  configBytes: 4 * MiB,
  /** A run's summary (`upsertBucket(summaryMetrics:)` or the file stream's `wandb-summary.json`). */
  summaryBytes: 2 * MiB,
  /** One history row (a `run.log` call: one line of `wandb-history.jsonl`). */
  historyRowBytes: 4 * MiB,
  /** One line of `wandb-events.jsonl` (system metrics). */
  eventsRowBytes: 1 * MiB,
  /** An artifact's metadata (createArtifact, updateArtifact), JSON text. */
  metadataBytes: 4 * MiB,
  /** Each text attribute: a run's display name, notes, group, job type; an artifact's description. */
  textBytes: 256 * 1024,
  /** Tags of one run, and bytes of each (W&B's own tags are at most 64 characters). */
  tags: 1_000,
  tagBytes: 256,
  /** Distinct numeric metrics (history and summary, nested keys flattened) of one run. */
  metricsPerRun: 20_000,
  /** Characters of one metric name (nested keys joined with '.'). */
  metricNameChars: 512,
} as const;

/** The newest history lines kept for `wandb.init(resume=...)` (run-state.ts) stay under this together. */
export const HISTORY_TAIL_BYTES = 4 * MiB;
export const EVENTS_TAIL_BYTES = 1 * MiB;

/** A field over its limit: HTTP 413 on the W&B routes, with this message. */
export class FieldTooLarge extends ApiError {
  constructor(message: string) {
    super("bad_request", message);
    this.name = "FieldTooLarge";
  }
}

/** Throws FieldTooLarge when `text` is longer than `limit` bytes (UTF-8). */
export function checkBytes(what: string, text: string | null | undefined, limit: number): void {
  if (text === null || text === undefined) return;
  // A string has at most 3 bytes per UTF-16 unit: most are decided without counting.
  if (text.length * 3 <= limit) return;
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limit) throw new FieldTooLarge(`${what} is ${mib(bytes)}; this server stores at most ${mib(limit)}`);
}

/** Keeps the newest lines (at most `count`) whose total stays within `bytes`; the newest is always kept. */
export function tailWithin(lines: readonly string[], count: number, bytes: number): string[] {
  const kept: string[] = [];
  let total = 0;
  for (let i = lines.length - 1; i >= 0 && kept.length < count; i--) {
    const line = lines[i] as string;
    total += Buffer.byteLength(line, "utf8");
    if (kept.length > 0 && total > bytes) break;
    kept.unshift(line);
  }
  return kept;
}

function mib(bytes: number): string {
  return bytes >= MiB ? `${(bytes / MiB).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}
