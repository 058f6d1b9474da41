// The domain objects of one process over one database: built once here for the server and for a
// standalone training worker, so both see the same collections the same way.
import { readFileSync } from "node:fs";
import type { Db } from "mongodb";
import type { Config } from "../core/config.js";
import type { Logger } from "../core/logger.js";
import { Artifacts } from "../artifacts/index.js";
import { EvaluationStore } from "../evaluations/index.js";
import { EventLog } from "../events/index.js";
import { modelPath, StoredResponses } from "../inference/index.js";
import { AdapterFiles, BaseModelCatalog, Checkpoints, ModelDeletion, ModelRegistry, Runs, Trainability, TrajectoryLog } from "../models/index.js";
import { armFailpoints } from "../core/failpoints.js";
import { BlobCollector, ensureIndexes, migrateLegacyBlobs, openBlobStore, UrlSigner } from "../store/index.js";
import { TrainingJobs } from "../jobs/index.js";
import { DEFAULT_TRAINER_PYTHON, LocalTrainer, trainerFor, TrainerPool, trainerSettings, TrainingWorker } from "../training/index.js";
import { ArtifactUploads, ArtifactViews, loraImporter, WandbApi, WandbRuns, WandbRunStates } from "../wandb/index.js";
import { ApiKeys } from "../gateway/index.js";
import { Futures, TinkerCheckpoints, TinkerSessions, TrainingCommands, TrainingRuns } from "../tinker/index.js";

/** The service's version (package.json), as W&B's serverInfo reports it. */
const SERVICE_VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

export async function buildServices(db: Db, config: Config, log: Logger) {
  armFailpoints(config.failpoints);
  const keys = new ApiKeys(db);
  // Large payloads live in the blob store; the database holds their names (content hashes).
  const blobs = await openBlobStore({ blobStoreUrl: config.blobStoreUrl, dataDir: config.dataDir });
  const catalog = new BaseModelCatalog(config.baseModels, config.priorityModels);
  const runs = new Runs(db);
  const checkpoints = new Checkpoints(db, blobs);
  const registry = new ModelRegistry(db, catalog, runs, checkpoints);
  const trajectoryLog = new TrajectoryLog(db, blobs);
  const events = new EventLog(db);
  const jobs = new TrainingJobs(db, blobs, events);
  const artifacts = new Artifacts(db, blobs);
  const adapters = new AdapterFiles(config.dataDir, checkpoints);
  const wandbRunStates = new WandbRunStates(db);
  const responses = new StoredResponses(db);
  const evaluations = new EvaluationStore(db);
  const deletion = new ModelDeletion({ registry, checkpoints, runs, trajectoryLog, jobs, events, artifacts, wandbRunStates, dependents: [evaluations] });
  // The local trainer process starts on first use (a job, or a base-model check), not here.
  const local =
    config.trainerUrls.length > 0
      ? null
      : new LocalTrainer({ python: config.trainerPython || DEFAULT_TRAINER_PYTHON, dataDir: config.dataDir, threads: config.trainerThreads, nice: config.trainerNice, log: log.child({ component: "trainer" }) });
  const trainers = new TrainerPool(config.trainerUrls, local, trainerSettings(config));
  // hf: models are only inspected once the engine or a job has downloaded them.
  const trainability = new Trainability(catalog, (entry) => (entry.source.startsWith("hf:") ? Promise.resolve(null) : modelPath(entry.source, config.dataDir, 0).catch(() => null)));
  const worker = new TrainingWorker(
    {
      jobs,
      events,
      registry,
      catalog,
      checkpoints,
      runs,
      artifacts,
      adapters,
      baseModelPath: (source) => modelPath(source, config.dataDir, config.engineHubTimeoutMs),
      train: trainerFor(trainers),
      artifactHttpsHosts: config.artifactHttpsHosts,
      log: log.child({ component: "worker" }),
    },
    { leaseMs: config.workerLeaseMs, pollMs: 1_000, maxAttempts: config.workerMaxAttempts },
  );
  // The W&B API (services/wandb) over the same stores: runs are the tracking runs, artifacts the
  // artifact store plus each model's checkpoints as `lora` artifacts.
  const views = new ArtifactViews(artifacts, checkpoints, registry);
  const importCheckpoint = loraImporter({
    catalog,
    checkpoints,
    baseModelPath: (source) => modelPath(source, config.dataDir, config.engineHubTimeoutMs),
    convertAdapter: (ref, peft, signal) => trainers.convertAdapter(ref, peft, signal),
  });
  const uploads = new ArtifactUploads(db, blobs, artifacts, views, registry, importCheckpoint);
  // The Tinker API's stores and its training commands (services/tinker), on the same trainers.
  const tinkerSessions = new TinkerSessions(db);
  const tinkerRuns = new TrainingRuns(db);
  const futures = new Futures(db, blobs, config.tinkerFutureTtlMs);
  const tinkerCheckpoints = new TinkerCheckpoints(db);
  const tinkerCommands = new TrainingCommands({
    catalog,
    trainability,
    registry,
    checkpoints,
    deletion,
    blobs,
    runs: tinkerRuns,
    tinkerCheckpoints,
    sessions: tinkerSessions,
    baseModelPath: (source) => modelPath(source, config.dataDir, config.engineHubTimeoutMs),
    adapterCommand: (command, signal) => trainers.adapterCommand(command, signal),
  });
  // Every record that names blobs: asked by the collector what it holds (those with GridFS-era records moved off it once).
  const legacyBlobOwners = [artifacts, checkpoints, jobs, trajectoryLog, uploads];
  const blobOwners = [...legacyBlobOwners, futures, tinkerCheckpoints];
  await ensureIndexes([keys, runs, checkpoints, registry, trajectoryLog, events, jobs, artifacts, wandbRunStates, uploads, tinkerSessions, tinkerRuns, futures, tinkerCheckpoints, responses, evaluations]);
  await migrateLegacyBlobs(db, blobs, legacyBlobOwners, log.child({ component: "blobs" }));
  const blobCollector = new BlobCollector(blobs, blobOwners, config.blobGraceMs, log.child({ component: "blobs" }));
  const wandb = new WandbApi({
    runs: new WandbRuns(runs, wandbRunStates, registry),
    views,
    uploads,
    signer: await UrlSigner.open(db, "wandb-url-signing"),
    serverVersion: SERVICE_VERSION,
    queryLimits: {
      maxAliases: config.wandbGraphqlMaxAliases,
      maxFields: config.wandbGraphqlMaxFields,
      maxDepth: config.wandbGraphqlMaxDepth,
      maxCost: config.wandbGraphqlMaxCost,
      introspection: config.wandbGraphqlIntrospection,
    },
    costBudget: { capacity: config.wandbGraphqlEntityBudget, windowMs: config.wandbGraphqlBudgetWindowMs },
  });
  const tinker = { sessions: tinkerSessions, runs: tinkerRuns, futures, tinkerCheckpoints, commands: tinkerCommands, signer: await UrlSigner.open(db, "tinker-url-signing") };
  return { keys, blobs, blobCollector, catalog, runs, checkpoints, registry, trajectoryLog, events, jobs, artifacts, adapters, deletion, worker, trainers, trainability, wandb, tinker, responses, evaluations };
}
