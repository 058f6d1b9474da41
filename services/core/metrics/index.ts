// Prometheus metrics (GET /metrics): the registry, scrape-time sources and the instruments.
export { addScrapeSource, refreshSources, registry, scrape, type ScrapeSource } from "./registry.js";
export * as instruments from "./instruments.js";
