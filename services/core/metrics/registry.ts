// The process's one Prometheus registry (prom-client) and what runs at scrape time. Hooks in the
// services record into the instruments (instruments.ts); state that lives elsewhere (the database,
// the engine child process, remote replicas) is read by the sources the composition root adds, each
// time /metrics is scraped, so nothing polls in the background.
import { Registry } from "prom-client";

export const registry = new Registry();

/** Refreshes gauges from where their state lives; a failing source must not fail the scrape. */
export type ScrapeSource = () => Promise<void>;

const sources: ScrapeSource[] = [];

export function addScrapeSource(source: ScrapeSource): void {
  sources.push(source);
}

/** Runs every source (a failing one leaves its gauges as they were). */
export async function refreshSources(): Promise<void> {
  await Promise.all(sources.map((source) => source().catch(() => undefined)));
}

/** The exposition text (format 0.0.4), after every source has refreshed its gauges. */
export async function scrape(): Promise<{ contentType: string; body: string }> {
  await refreshSources();
  return { contentType: registry.contentType, body: await registry.metrics() };
}
