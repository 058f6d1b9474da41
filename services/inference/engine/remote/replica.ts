// One remote server of a base model, as routing sees it: up or down (from health checks and from
// failed requests), requests in flight, and a restart in progress (a replica this service runs,
// restarted to load adapters), which new requests wait out or avoid.
export class Replica {
  /** Until the first health check answers, a replica is assumed up (requests find out soon enough). */
  up = true;
  inflight = 0;
  /** Why the replica was last marked down (for errors and logs). */
  lastError = "";
  /** Set while the replica restarts; resolves when it serves again (or rejects if it cannot). */
  restarting: Promise<void> | null = null;
  /** Adapters loaded on the replica, least recently used first (key -> the name or id it knows them by). */
  readonly adapters = new Map<string, string>();
  /** When this service last loaded each adapter (performance.now()), so a listing asked for before does not forget it. */
  private readonly loadedAt = new Map<string, number>();

  constructor(
    /** Base URL, no trailing slash. */
    public url: string,
  ) {}

  /**
   * What the replica reports it has loaded (key -> its handle there): others are forgotten, new
   * ones count as least recently used.
   */
  syncAdapters(reported: ReadonlyMap<string, string>, listedAt: number): void {
    // An adapter loaded after the listing was asked for is kept: the listing cannot show it yet.
    const kept = [...this.adapters].filter(([key]) => reported.has(key) || (this.loadedAt.get(key) ?? -Infinity) > listedAt);
    this.adapters.clear();
    for (const [key, handle] of reported) if (!kept.some(([k]) => k === key)) this.adapters.set(key, handle);
    for (const [key, handle] of kept) this.adapters.set(key, reported.get(key) ?? handle);
    for (const key of [...this.loadedAt.keys()]) if (!this.adapters.has(key)) this.loadedAt.delete(key);
  }

  /** Records an adapter this service has just loaded on the replica. */
  markLoaded(key: string, handle: string): void {
    this.adapters.delete(key);
    this.adapters.set(key, handle);
    this.loadedAt.set(key, performance.now());
  }

  /** Marks an adapter as just used (most recently used last). */
  touch(key: string): void {
    const handle = this.adapters.get(key);
    if (handle === undefined) return;
    this.adapters.delete(key);
    this.adapters.set(key, handle);
  }
}
