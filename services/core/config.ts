// The one configuration loader: environment variables with documented defaults (README's
// configuration table mirrors `configVariables`).
import { constants } from "node:os";
import { resolve } from "node:path";
import { parseEngines, type RemoteEngineSettings } from "./engines-config.js";
import type { LogLevel } from "./logger.js";

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** Unset: start the embedded database under dataDir. */
  mongodbUri: string | undefined;
  mongodbDb: string;
  /** Which embedded database to start: "auto" (the data directory's kind, else mongod, else FerretDB). */
  embeddedDatabase: "auto" | "mongod" | "ferretdb";
  /** First wait before the supervisor restarts an embedded database that exited (doubling up to 30 s). */
  databaseRestartDelayMs: number;
  bodyLimitBytes: number;
  /** A new connection's first bytes and an HTTP/1.1 request's headers must arrive within this. */
  headersTimeoutMs: number;
  /** A whole HTTP/1.1 request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** Idle keep-alive connections and HTTP/2 sessions without streams are closed after this. */
  idleTimeoutMs: number;
  /** A response the client takes nothing of for this long is cut. */
  stallTimeoutMs: number;
  /** Every database operation (with its retries) fails after this: the request answers 503. */
  databaseTimeoutMs: number;
  logLevel: LogLevel;
  /** Extra base models offered by this deployment (names, GGUF paths or hf: references). */
  baseModels: string[];
  shutdownGraceMs: number;
  /** Entity of the API key created on a first start of the embedded default. */
  bootstrapEntity: string;
  /** Base models scheduled by request priority (others: first come, first served). */
  priorityModels: string[];
  /** llama.cpp threads per context; 0 = chosen per model (engine/llama/threads.ts). */
  engineThreads: number;
  /** Parallel sequences per llama.cpp context (continuous batching). */
  engineSequences: number;
  /** Cap on each base model's context per sequence; 0: the model's own trained context length. */
  engineContextSize: number;
  /** Requests waiting for a sequence, per base model, before 429. */
  engineMaxQueue: number;
  /** Contexts (one per base model + adapter) kept loaded before the least recently used is freed. */
  engineMaxContexts: number;
  /** 0: a quarter of the machine's memory. */
  engineContextMemoryMb: number;
  /** How long an hf: model may take to resolve before the request fails. */
  engineHubTimeoutMs: number;
  /** Which llama.cpp binary the embedded engine loads. */
  engineBinary: "auto" | "prebuilt";
  /** Test only: the engine process dies of a signal when it starts generating for these base models. */
  engineFaultInjection: { model: string; signal: NodeJS.Signals; build: "localBuild" | "prebuilt" | null }[];
  /** Base models served by remote replicas instead of the embedded engine (ENGINES). */
  engines: RemoteEngineSettings[];
  /** Hosts SFT jobs may read https training data from. */
  artifactHttpsHosts: string[];
  /** Run a training worker inside the server process. */
  trainingWorker: boolean;
  /** A worker's lease on a job; it renews it every third of this. */
  workerLeaseMs: number;
  /** Attempts of a job whose worker died before it is failed. */
  workerMaxAttempts: number;
  /** Trainers on other machines; empty: the worker starts and supervises one local trainer. */
  trainerUrls: string[];
  /** The Python interpreter of the local trainer ("" = the project's environment under .cache/). */
  trainerPython: string;
  /** CPU threads of the local trainer; 0 = every core this process may use. */
  trainerThreads: number;
}

export const configVariables: { name: string; default: string; meaning: string }[] = [
  { name: "HOST", default: "127.0.0.1", meaning: "address to listen on" },
  { name: "PORT", default: "8000", meaning: "port for gRPC, gRPC-Web, Connect and REST (0 = any free port)" },
  { name: "DATA_DIR", default: "./data", meaning: "embedded database files, models, logs" },
  { name: "MONGODB_URI", default: "(unset)", meaning: "use this MongoDB instead of the embedded database" },
  { name: "MONGODB_DB", default: "srl", meaning: "database name" },
  { name: "EMBEDDED_DATABASE", default: "auto", meaning: "auto (the kind already in DATA_DIR, else mongod if one can be had, else FerretDB), mongod or ferretdb" },
  { name: "DATABASE_RESTART_DELAY_MS", default: "500", meaning: "first wait before a crashed embedded database is restarted (doubling up to 30 s while it keeps failing)" },
  { name: "BODY_LIMIT_BYTES", default: "67108864", meaning: "largest request body accepted (64 MiB)" },
  { name: "HEADERS_TIMEOUT_MS", default: "20000", meaning: "a new connection's first bytes, and an HTTP/1.1 request's headers, must arrive within this" },
  { name: "REQUEST_TIMEOUT_MS", default: "300000", meaning: "a whole HTTP/1.1 request (headers and body) must arrive within this" },
  { name: "IDLE_TIMEOUT_MS", default: "65000", meaning: "idle keep-alive connections, and HTTP/2 sessions with no open stream, are closed after this" },
  { name: "STALL_TIMEOUT_MS", default: "30000", meaning: "a response (a stream above all) whose client takes nothing of it for this long is cut" },
  { name: "DATABASE_TIMEOUT_MS", default: "2000", meaning: "each database operation, retries included, fails after this (the request answers 503 with Retry-After)" },
  { name: "LOG_LEVEL", default: "info", meaning: "debug, info, warn or error" },
  { name: "BASE_MODELS", default: "(empty)", meaning: "comma-separated extra base models: name=path-or-hf:ref, optionally ;train=hf-directory-or-hf:repo (weights the trainer trains on instead of the GGUF)" },
  { name: "SHUTDOWN_GRACE_MS", default: "10000", meaning: "how long in-flight requests may finish on SIGTERM" },
  { name: "BOOTSTRAP_ENTITY", default: "local", meaning: "entity of the key created on a first embedded start" },
  { name: "PRIORITY_MODELS", default: "(empty)", meaning: "comma-separated base models scheduled by request priority" },
  { name: "ENGINE_THREADS", default: "0", meaning: "llama.cpp threads (0 = per model: llama.cpp's own count, its math cores, for a model of 48 MB or more, one fewer, at least 1, for a smaller one); a step decoding a single token runs on one thread fewer where they are chosen so or set to every core" },
  { name: "ENGINE_SEQUENCES", default: "8", meaning: "parallel sequences per context (continuous batching)" },
  { name: "ENGINE_CONTEXT_SIZE", default: "0", meaning: "cap on each base model's context per sequence (prompt + completion of one request); 0 = the model's own trained context length; either way lowered until a context of ENGINE_SEQUENCES fits in ENGINE_CONTEXT_MEMORY_MB (not below 512)" },
  { name: "ENGINE_MAX_QUEUE", default: "64", meaning: "requests waiting per base model before 429" },
  { name: "ENGINE_MAX_CONTEXTS", default: "4", meaning: "loaded contexts (base model + adapter) before LRU eviction" },
  { name: "ENGINE_CONTEXT_MEMORY_MB", default: "0", meaning: "memory for contexts (KV caches, adapters) before LRU eviction; 0 = a quarter of the machine's memory" },
  { name: "ENGINE_HUB_TIMEOUT_MS", default: "30000", meaning: "how long to wait for an hf: model download to start before failing" },
  { name: "ENGINE_BINARY", default: "auto", meaning: "llama.cpp binary of the embedded engine: auto (the build the install checked on real models and linked, .cache/llama-binaries.json; where it crashes twice in a row on a model, node-llama-cpp's prebuilt binary if that passed its check) or prebuilt (always node-llama-cpp's prebuilt binary)" },
  { name: "ENGINE_FAULT_INJECTION", default: "(empty)", meaning: "tests of crash handling only: comma-separated base-model=SIGNAL[@localBuild|@prebuilt]; the engine process kills itself with SIGNAL when it starts generating for that base model (on that binary only, where one is named)" },
  { name: "ENGINES", default: "(empty)", meaning: "base models served by llama-server or vLLM replicas instead of the embedded engine: a JSON object keyed by base model name, inline or the path of a JSON file (README: Remote engines)" },
  { name: "TRAINING_WORKER", default: "1", meaning: "run a training worker in the server process (0: only `npm run worker` processes train)" },
  { name: "WORKER_LEASE_MS", default: "30000", meaning: "lease of a worker on a job; a crashed worker's job is retried after it" },
  { name: "WORKER_MAX_ATTEMPTS", default: "2", meaning: "attempts of a job whose worker died before it fails" },
  { name: "TRAINER_URLS", default: "(empty)", meaning: "comma-separated trainers on other machines (http://host:port of `python -m srl_trainer --listen 0.0.0.0:PORT`); empty: each worker starts one local trainer" },
  { name: "TRAINER_PYTHON", default: "(the project's environment)", meaning: "Python interpreter of the local trainer; default .cache/trainer-venv/bin/python, which the install step creates" },
  { name: "TRAINER_THREADS", default: "0", meaning: "CPU threads of the local trainer (0 = every core); the trainer process also reads TRAINER_DEVICE (cpu, cuda, cuda:N) and TRAINER_MICRO_BATCH_TOKENS" },
  { name: "ARTIFACT_HTTPS_HOSTS", default: "(empty)", meaning: "comma-separated hosts SFT jobs may read https training data from" },
];

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return {
    host: env.HOST || "127.0.0.1",
    port: intVar(env, "PORT", 8000, 0, 65535),
    dataDir: resolve(env.DATA_DIR || "./data"),
    mongodbUri: env.MONGODB_URI || undefined,
    mongodbDb: env.MONGODB_DB || "srl",
    embeddedDatabase: choiceVar(env, "EMBEDDED_DATABASE", ["auto", "mongod", "ferretdb"] as const, "auto"),
    databaseRestartDelayMs: intVar(env, "DATABASE_RESTART_DELAY_MS", 500, 10, 600_000),
    bodyLimitBytes: intVar(env, "BODY_LIMIT_BYTES", 64 * 1024 * 1024, 1024, 2 ** 31 - 1),
    headersTimeoutMs: intVar(env, "HEADERS_TIMEOUT_MS", 20_000, 100, 3_600_000),
    requestTimeoutMs: intVar(env, "REQUEST_TIMEOUT_MS", 300_000, 1_000, 86_400_000),
    idleTimeoutMs: intVar(env, "IDLE_TIMEOUT_MS", 65_000, 100, 86_400_000),
    stallTimeoutMs: intVar(env, "STALL_TIMEOUT_MS", 30_000, 100, 86_400_000),
    databaseTimeoutMs: intVar(env, "DATABASE_TIMEOUT_MS", 2_000, 100, 600_000),
    logLevel: levelVar(env.LOG_LEVEL),
    baseModels: list(env.BASE_MODELS),
    shutdownGraceMs: intVar(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    bootstrapEntity: env.BOOTSTRAP_ENTITY || "local",
    artifactHttpsHosts: list(env.ARTIFACT_HTTPS_HOSTS),
    trainingWorker: (env.TRAINING_WORKER ?? "1") !== "0",
    workerLeaseMs: intVar(env, "WORKER_LEASE_MS", 30_000, 500, 3_600_000),
    workerMaxAttempts: intVar(env, "WORKER_MAX_ATTEMPTS", 2, 1, 100),
    trainerUrls: list(env.TRAINER_URLS),
    trainerPython: env.TRAINER_PYTHON || "",
    trainerThreads: intVar(env, "TRAINER_THREADS", 0, 0, 1024),
    priorityModels: list(env.PRIORITY_MODELS),
    engineThreads: intVar(env, "ENGINE_THREADS", 0, 0, 256),
    engineSequences: intVar(env, "ENGINE_SEQUENCES", 8, 1, 256),
    engineContextSize: intVar(env, "ENGINE_CONTEXT_SIZE", 0, 0, 1 << 20),
    engineMaxQueue: intVar(env, "ENGINE_MAX_QUEUE", 64, 0, 100_000),
    engineMaxContexts: intVar(env, "ENGINE_MAX_CONTEXTS", 4, 1, 64),
    engineContextMemoryMb: intVar(env, "ENGINE_CONTEXT_MEMORY_MB", 0, 0, 1 << 24),
    engineHubTimeoutMs: intVar(env, "ENGINE_HUB_TIMEOUT_MS", 30_000, 100, 3_600_000),
    engineBinary: choiceVar(env, "ENGINE_BINARY", ["auto", "prebuilt"] as const, "auto"),
    engineFaultInjection: faultsVar(env.ENGINE_FAULT_INJECTION),
    engines: parseEngines(env.ENGINES),
  };
}

function list(raw: string | undefined): string[] {
  return (raw ?? "").split(",").map((s) => s.trim()).filter((s) => s.length > 0);
}

function choiceVar<T extends string>(env: NodeJS.ProcessEnv, name: string, choices: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const chosen = choices.find((choice) => choice === raw);
  if (chosen === undefined) throw new Error(`${name}=${raw} is not one of ${choices.join(", ")}`);
  return chosen;
}

function intVar(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name}=${raw} is not an integer between ${min} and ${max}`);
  }
  return value;
}

function faultsVar(raw: string | undefined): Config["engineFaultInjection"] {
  return list(raw).map((entry) => {
    const match = /^(.+)=(SIG[A-Z0-9]+)(?:@(localBuild|prebuilt))?$/.exec(entry);
    const signal = match?.[2];
    if (!match || signal === undefined || !Object.hasOwn(constants.signals, signal)) {
      throw new Error(`ENGINE_FAULT_INJECTION entry ${entry} is not base-model=SIGNAL[@localBuild|@prebuilt]`);
    }
    return { model: match[1]!, signal: signal as NodeJS.Signals, build: (match[3] as "localBuild" | "prebuilt" | undefined) ?? null };
  });
}

function levelVar(raw: string | undefined): LogLevel {
  if (raw === undefined || raw === "") return "info";
  if (raw === "debug" || raw === "info" || raw === "warn" || raw === "error") return raw;
  throw new Error(`LOG_LEVEL=${raw} must be debug, info, warn or error`);
}
