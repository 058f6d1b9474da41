// Periodic upkeep of the Tinker API: sessions whose SDK went silent are ended (their training
// clients' live adapters released), futures' results past their time become `expired` (a retrieve
// then answers 410), checkpoints past their TTL are deleted with what they hold (a sampler
// checkpoint's adapter is its model's checkpoint; blobs go with the blob collector).
import type { Logger } from "../core/logger.js";
import type { Checkpoints } from "../models/index.js";
import type { Futures } from "./futures.js";
import type { TinkerCheckpoints } from "./tinker-checkpoints.js";

export class TinkerHousekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      futures: Futures;
      tinkerCheckpoints: TinkerCheckpoints;
      checkpoints: Checkpoints;
      /** Ends sessions silent since then (TinkerApi.expireSessions). */
      expireSessions(silentSince: Date): Promise<number>;
      sessionTimeoutMs: number;
      log: Logger;
    },
    private readonly everyMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep()
        .then(() => undefined)
        .catch((error: unknown) => this.deps.log.warn("tinker housekeeping failed", { error: String(error) }))
        .finally(() => (this.running = undefined));
    }, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async sweep(now = new Date()): Promise<{ expiredFutures: number; deletedCheckpoints: number; expiredSessions: number }> {
    const expiredSessions = await this.deps.expireSessions(new Date(now.getTime() - this.deps.sessionTimeoutMs));
    const expiredFutures = await this.deps.futures.expire(now);
    let deletedCheckpoints = 0;
    for (const checkpoint of await this.deps.tinkerCheckpoints.expired(now)) {
      await this.deps.tinkerCheckpoints.remove(checkpoint, this.deps.checkpoints);
      deletedCheckpoints++;
    }
    if (expiredFutures + deletedCheckpoints + expiredSessions > 0) this.deps.log.info("tinker housekeeping", { expired_futures: expiredFutures, deleted_checkpoints: deletedCheckpoints, expired_sessions: expiredSessions });
    return { expiredFutures, deletedCheckpoints, expiredSessions };
  }
}
