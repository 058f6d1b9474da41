// The server process: database (embedded or MONGODB_URI), indexes, first API key, services,
// engines, then the gateway on one port.
import { totalmem } from "node:os";
import type { Config } from "../core/config.js";
import type { Logger } from "../core/logger.js";
import { connectDatabase, databaseHealth, type EmbeddedDatabase, publishDatabaseUri, startEmbeddedDatabase } from "../store/index.js";
import { artifactsHandlers } from "../artifacts/index.js";
import { eventsHandlers } from "../events/index.js";
import { evaluationsHandlers } from "../evaluations/index.js";
import { buildRemoteEngines, EngineClient, engineScrapeSource, EngineSet, inferenceHandlers, messagesHandlers, ModelResolver, responsesHandlers, tokenizerHandlers } from "../inference/index.js";
import { modelsHandlers } from "../models/index.js";
import { systemHandlers, systemScrapeSource } from "../system/index.js";
import { addScrapeSource } from "../core/metrics/index.js";
import { trainingHandlers } from "../training/index.js";
import { TinkerApi, tinkerHandlers, TinkerHousekeeping, TokenSampler } from "../tinker/index.js";
import { apiKeysHandlers, serveGateway, type ApiKeys } from "../gateway/index.js";
import { buildServices } from "./services.js";
import { hfTokenizerRepos } from "./hf-tokenizers.js";

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
  const { keys, blobs, blobCollector, catalog, registry, checkpoints, runs, trajectoryLog, deletion, jobs, events, artifacts, adapters, worker, trainability, wandb, tinker } = services;
  if (embedded) await bootstrapKey(keys, config.bootstrapEntity, log);
  const unpublish = embedded ? await publishDatabaseUri(config.dataDir, databaseUri) : async () => {};

  const embeddedEngine = new EngineClient(
    {
      threads: config.engineThreads,
      sequences: config.engineSequences,
      contextSize: config.engineContextSize,
      maxQueue: config.engineMaxQueue,
      maxQueuePerEntity: config.engineMaxQueuePerEntity,
      maxSequencesPerEntity: config.engineMaxSequencesPerEntity,
      maxContexts: config.engineMaxContexts,
      contextMemoryBytes: (config.engineContextMemoryMb || Math.floor(totalmem() / 4 / 2 ** 20)) * 2 ** 20,
      logLevel: config.logLevel,
      dataDir: config.dataDir,
      hubTimeoutMs: config.engineHubTimeoutMs,
      binary: config.engineBinary,
      faults: config.engineFaultInjection,
      nice: config.engineNice,
    },
    log.child({ component: "engine" }),
  );
  const remoteEngines = await buildRemoteEngines(config.engines, { catalog, renderer: embeddedEngine, dataDir: config.dataDir, hubTimeoutMs: config.engineHubTimeoutMs, log });
  const engine = new EngineSet(embeddedEngine, remoteEngines, { maxGenerationsPerEntity: config.entityMaxGenerations });
  // A vLLM replica loads the checkpoint's PEFT files, not only its GGUF.
  const peftBases = new Set(config.engines.filter((e) => e.kind === "vllm").map((e) => e.base));
  // The embedded engine runs a request's n choices in parallel sequences; remote replicas take n as requests.
  const remoteBases = new Set(config.engines.map((e) => e.base));
  const resolver = new ModelResolver({ catalog, registry, checkpoints, adapters, wholeAdapter: (base) => peftBases.has(base) });

  const limits = { maxPromptBytes: config.maxPromptBytes, maxChoices: (base: string) => (remoteBases.has(base) ? null : config.engineSequences) };
  // The Tinker API: requests a previous process left unfinished can no longer finish (they say so).
  const interrupted = await tinker.futures.failInterrupted();
  if (interrupted > 0) log.warn("tinker requests interrupted by the restart were marked failed", { count: interrupted });
  const tinkerApi = new TinkerApi({
    ...tinker,
    sampler: new TokenSampler({ engine, resolver, limits }),
    log: log.child({ component: "tinker" }),
    limits: { maxClientsPerEntity: config.tinkerEntityMaxClients, maxPendingPerEntity: config.tinkerEntityMaxPending, trainerSlots: Math.max(1, config.trainerUrls.length), seqGapWaitMs: config.tinkerSeqGapWaitMs },
  });
  const tinkerHousekeeping = new TinkerHousekeeping(
    {
      futures: tinker.futures,
      tinkerCheckpoints: tinker.tinkerCheckpoints,
      checkpoints,
      expireSessions: (silentSince) => tinkerApi.expireSessions(silentSince),
      sessionTimeoutMs: config.tinkerSessionTimeoutMs,
      log: log.child({ component: "tinker" }),
    },
    Math.min(60_000, Math.max(1_000, Math.floor(config.tinkerSessionTimeoutMs / 4))),
  );

  const handlers = [
    inferenceHandlers({ engine, resolver, catalog, registry, checkpoints, limits }),
    messagesHandlers({ engine, resolver, limits }),
    responsesHandlers({ engine, resolver, limits, store: services.responses }),
    evaluationsHandlers({ engine, resolver, limits, registry, checkpoints, store: services.evaluations }),
    tokenizerHandlers({ vocabulary: embeddedEngine, engine, resolver, catalog, limits, defaultModel: config.tokenizerDefaultModel }),
    modelsHandlers({ catalog, registry, checkpoints, runs, trajectoryLog, deletion, jobs, trainability }),
    systemHandlers({ database, jobs, databaseHealth: () => databaseHealth(database, embedded), operatorEntity: config.bootstrapEntity }),
    apiKeysHandlers({ keys }),
    trainingHandlers({ artifacts, checkpoints, jobs, events, registry, trainability, artifactHttpsHosts: config.artifactHttpsHosts, maxJobsPerEntity: config.entityMaxJobs, onJobCreated: () => worker.wake() }),
    artifactsHandlers({ artifacts, blobs, bodyLimitBytes: config.bodyLimitBytes }),
    eventsHandlers({ events, ownedJobId: async (entity, id) => (await jobs.getOwned(entity, id))._id }),
    tinkerHandlers({ api: tinkerApi, catalog, trainability, checkpoints, sampleable: () => true, retrieveWaitMs: config.tinkerRetrieveWaitMs, signer: tinker.signer }),
  ];
  addScrapeSource(systemScrapeSource({ database, jobs, databaseHealth: () => databaseHealth(database, embedded) }));
  addScrapeSource(engineScrapeSource(embeddedEngine, remoteEngines));
  const gateway = await serveGateway({ handlers, keys, wandb, hfTokenizers: hfTokenizerRepos(catalog, config), blobs, config, log });
  if (config.trainingWorker) worker.start();
  blobCollector.start(config.blobCollectEveryMs);
  tinkerHousekeeping.start();
  log.info("listening", {
    url: `http://${config.host}:${gateway.port}`,
    protocols: ["grpc", "grpc-web", "connect", "rest"],
    database: embedded ? embedded.kind : "external",
  });

  return {
    port: gateway.port,
    databaseUri,
    async stop() {
      log.info("shutting down", { grace_ms: config.shutdownGraceMs });
      await gateway.close(config.shutdownGraceMs);
      await worker.stop();
      tinkerApi.stop();
      await tinkerHousekeeping.stop();
      await blobCollector.stop();
      await services.trainers.stop();
      await engine.stop();
      await database.close();
      await unpublish();
      await embedded?.stop();
      await blobs.close();
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
