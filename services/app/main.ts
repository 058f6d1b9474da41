// `npm start`: the whole service in one process.
import { loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { startApp } from "./server.js";

const config = loadConfig();
const log = createLogger({ level: config.logLevel });

// Last resort: every request path has its own error boundary (http-boundary.ts), so these mean a
// bug. A rejected promise nobody awaited is logged and the service carries on; an exception thrown
// out of a callback may have left state half-changed, so the process ends after logging it.
process.on("unhandledRejection", (reason: unknown) => log.error("unhandled rejection", { error: reason }));
process.on("uncaughtException", (error: Error) => {
  log.error("uncaught exception", { error });
  process.exit(1);
});

try {
  const app = await startApp(config, log);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("signal", { signal });
    app.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error("shutdown failed", { error });
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  process.stdout.write(
    `Serving on http://${config.host}:${app.port} (REST under /v1, gRPC, gRPC-Web and Connect on the same port).\n` +
      `Try: curl http://${config.host}:${app.port}/v1/health\n`,
  );
} catch (error) {
  log.error("start-up failed", { error });
  process.exit(1);
}
