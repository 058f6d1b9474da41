// What every view gets from the router: the query of its hash route, and a signal aborted when
// the person leaves the view (streams and refresh timers stop on it).
import { readable } from "./api.js";
import { showError } from "./dom.js";

export interface ViewContext {
  query: URLSearchParams;
  signal: AbortSignal;
}

/** Runs `refresh` every `ms` until the view is left (a refresh still running is not overlapped). */
export function everyWhileShown(context: ViewContext, ms: number, refresh: () => Promise<void>): void {
  const tick = async () => {
    if (context.signal.aborted) return;
    await refresh();
    if (!context.signal.aborted) timer = setTimeout(() => void tick(), ms);
  };
  let timer = setTimeout(() => void tick(), ms);
  context.signal.addEventListener("abort", () => clearTimeout(timer));
}

/**
 * Loads now and then every `ms` while the view is shown. A failed load shows its error; the next
 * load that succeeds clears it (only it: an error something else showed, a download's, stays).
 */
export async function keepLoaded(context: ViewContext, ms: number, load: () => Promise<void>): Promise<void> {
  let failed = false;
  const refresh = async () => {
    try {
      await load();
      if (failed) showError(null);
      failed = false;
    } catch (error) {
      if (context.signal.aborted) return;
      failed = true;
      showError(readable(error), error);
    }
  };
  await refresh();
  everyWhileShown(context, ms, refresh);
}
