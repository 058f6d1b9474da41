// Start-up: database (embedded or MONGODB_URI), indexes, first API key, services, one listener.
import { totalmem } from "node:os";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Config } from "../core/config.js";
import type { Logger } from "../core/logger.js";
import { startEmbeddedDatabase, type EmbeddedDatabase } from "../store/launcher.js";
import { databaseHealth } from "../store/health.js";
import { connectDatabase, publishDatabaseUri } from "../store/mongo.js";
import { eventsHandlers } from "../events/handlers.js";
import { inferenceHandlers } from "../inference/handlers.js";
import { EngineClient } from "../inference/engine/client.js";
import { EngineSet } from "../inference/engine/inference-engine.js";
import { buildRemoteEngines } from "../inference/engine/remote/build.js";
import { ModelResolver } from "../inference/resolve-model.js";
import { modelsHandlers } from "../models/handlers.js";
import { trainingHandlers } from "../training/handlers.js";
import type { ApiKeys } from "./auth/api-keys.js";
import { buildServices } from "./services.js";
import { listen } from "./listener.js";
import { buildEndpoints, registerEndpoints } from "./pipeline.js";
import { registerReflection } from "./reflection.js";
import { createTranscoder } from "./rest/transcoder.js";
import { serveConsole } from "./console-files.js";
import { wandbRoutes } from "./wandb-routes.js";
import { answerFailure, guardRequests } from "./http-boundary.js";

export interface App {
  port: number;
  databaseUri: string;
  /** Graceful stop: refuse new connections, let in-flight requests finish, close the database. */
  stop(): Promise<void>;
}

export async function startApp(config: Config, log: Logger): Promise<App> {
  const embedded: EmbeddedDatabase | undefined = config.mongodbUri
    ? undefined
    : await startEmbeddedDatabase({
        dataDir: config.dataDir,
        prefer: config.embeddedDatabase,
        restartDelayMs: config.databaseRestartDelayMs,
        log: (level, msg, fields) => log[level](msg, { component: "database", ...fields }),
      });
  const databaseUri = config.mongodbUri ?? (embedded as EmbeddedDatabase).uri;
  const database = await connectDatabase(databaseUri, config.mongodbDb, { timeoutMs: config.databaseTimeoutMs });
  if (database.serialized) log.info("database is FerretDB: one connection, operations in series (its concurrent updates are not atomic)", { component: "database" });
  const services = await buildServices(database.db, config, log);
  const { keys, catalog, registry, checkpoints, runs, trajectoryLog, deletion, jobs, events, artifacts, adapters, worker, trainability, wandb } = services;
  if (embedded) await bootstrapKey(keys, config.bootstrapEntity, log);
  const unpublish = embedded ? await publishDatabaseUri(config.dataDir, databaseUri) : async () => {};

  const embeddedEngine = new EngineClient(
    {
      threads: config.engineThreads,
      sequences: config.engineSequences,
      contextSize: config.engineContextSize,
      maxQueue: config.engineMaxQueue,
      maxContexts: config.engineMaxContexts,
      contextMemoryBytes: (config.engineContextMemoryMb || Math.floor(totalmem() / 4 / 2 ** 20)) * 2 ** 20,
      logLevel: config.logLevel,
      dataDir: config.dataDir,
      hubTimeoutMs: config.engineHubTimeoutMs,
      binary: config.engineBinary,
      faults: config.engineFaultInjection,
    },
    log.child({ component: "engine" }),
  );
  const remoteEngines = await buildRemoteEngines(config.engines, { catalog, renderer: embeddedEngine, dataDir: config.dataDir, hubTimeoutMs: config.engineHubTimeoutMs, log });
  const engine = new EngineSet(embeddedEngine, remoteEngines);
  // A vLLM replica loads the checkpoint's PEFT files, not only its GGUF.
  const peftBases = new Set(config.engines.filter((e) => e.kind === "vllm").map((e) => e.base));
  const resolver = new ModelResolver({ catalog, registry, checkpoints, adapters, wholeAdapter: (base) => peftBases.has(base) });

  const handlers = [
    inferenceHandlers({ engine, resolver, catalog, registry, checkpoints }),
    modelsHandlers({ database, catalog, registry, checkpoints, runs, trajectoryLog, deletion, jobs, trainability, databaseHealth: () => databaseHealth(database, embedded) }),
    trainingHandlers({ artifacts, checkpoints, jobs, events, registry, trainability, artifactHttpsHosts: config.artifactHttpsHosts, onJobCreated: () => worker.wake() }),
    eventsHandlers({ events, jobs }),
  ];
  const endpoints = buildEndpoints(handlers, keys);
  const shutdown = new AbortController();
  const transcoder = createTranscoder({ endpoints, keys, bodyLimitBytes: config.bodyLimitBytes, log, shutdownSignal: shutdown.signal });
  const wandbApi = wandbRoutes({ api: wandb, keys, bodyLimitBytes: config.bodyLimitBytes, log });
  const handler = connectNodeAdapter({
    routes: (router) => {
      registerEndpoints(router, endpoints);
      registerReflection(router, handlers.map((h) => h.service));
    },
    readMaxBytes: config.bodyLimitBytes,
    shutdownSignal: shutdown.signal,
    interceptors: [rpcLog(log)],
    fallback: (req, res) =>
      void wandbApi(req, res)
        .then(async (served) => (served || (await serveConsole(req, res)) ? undefined : transcoder(req, res)))
        .catch((error: unknown) => answerFailure(res, error, log)),
  });
  const listener = await listen(guardRequests(handler, log), config.host, config.port, {
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: Math.max(config.requestTimeoutMs, config.headersTimeoutMs),
    idleTimeoutMs: config.idleTimeoutMs,
    stallTimeoutMs: config.stallTimeoutMs,
  });
  if (config.trainingWorker) worker.start();
  log.info("listening", {
    url: `http://${config.host}:${listener.port}`,
    protocols: ["grpc", "grpc-web", "connect", "rest"],
    database: embedded ? embedded.kind : "external",
  });

  return {
    port: listener.port,
    databaseUri,
    async stop() {
      log.info("shutting down", { grace_ms: config.shutdownGraceMs });
      const closing = listener.close(config.shutdownGraceMs);
      // Streams (event watches, completions) end when the grace period is over.
      const timer = setTimeout(() => shutdown.abort(), config.shutdownGraceMs);
      await closing;
      clearTimeout(timer);
      shutdown.abort();
      await worker.stop();
      await services.trainers.stop();
      await engine.stop();
      await database.close();
      await unpublish();
      await embedded?.stop();
      log.info("stopped");
    },
  };
}

/** On the embedded default, a first start creates one key and prints it once. */
async function bootstrapKey(keys: ApiKeys, entity: string, log: Logger): Promise<void> {
  if ((await keys.count()) > 0) return;
  const { key } = await keys.create(entity);
  process.stdout.write(
    `\nCreated the first API key (entity "${entity}"); it is shown only this once:\n\n    ${key}\n\n` +
      `Use it as 'Authorization: Bearer <key>'. More keys: npm run keys -- create --entity NAME\n\n`,
  );
  log.info("created first API key", { entity });
}

/** One structured line per Connect, gRPC and gRPC-Web call (REST calls are logged by the transcoder). */
function rpcLog(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const contentType = req.header.get("content-type") ?? "";
    const protocol = contentType.startsWith("application/grpc-web") ? "grpc-web" : contentType.startsWith("application/grpc") ? "grpc" : "connect";
    const fields = { protocol, rpc: `${req.service.typeName}/${req.method.name}` };
    try {
      const res = await next(req);
      log.info("request", { ...fields, code: "ok", duration_ms: Math.round(performance.now() - started) });
      return res;
    } catch (error) {
      const code = ConnectError.from(error).code;
      log.info("request", { ...fields, code, duration_ms: Math.round(performance.now() - started) });
      throw error;
    }
  };
}
