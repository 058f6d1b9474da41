// The one configuration loader: environment variables with documented defaults (README's
// configuration table mirrors `configVariables`).
import { constants } from "node:os";
import { resolve } from "node:path";
import { parseEngines, type RemoteEngineSettings } from "./engines-config.js";
import { type FailpointAction, parseFailpoints } from "./failpoints.js";
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
  /** Most bytes of prompt text one chat or completion request may carry (checked before tokenizing). */
  maxPromptBytes: number;
  /** Largest body of a chat or completion request (Inference service), below bodyLimitBytes. */
  inferenceBodyLimitBytes: number;
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
  /** Where large payloads live: "" (files under dataDir/blobs), s3://bucket/prefix?endpoint=..., or file:///path. */
  blobStoreUrl: string;
  /** Blobs no record names, and leftovers of interrupted uploads, are removed once this old. */
  blobGraceMs: number;
  /** How often the blob collector runs (0: never). */
  blobCollectEveryMs: number;
  /** How long a finished Tinker request's result stays retrievable (then 410). */
  tinkerFutureTtlMs: number;
  /** How long retrieve_future holds a request for a result still running before answering 408. */
  tinkerRetrieveWaitMs: number;
  /** Training clients (live adapters) one entity may hold at once before create_model answers 429. */
  tinkerEntityMaxClients: number;
  /** Unfinished Tinker requests one entity may have before new ones answer 429. */
  tinkerEntityMaxPending: number;
  /** A session without a heartbeat this long is ended and its training clients released. */
  tinkerSessionTimeoutMs: number;
  /** How long a command waits for an earlier seq_id of its training client that has not arrived. */
  tinkerSeqGapWaitMs: number;
  logLevel: LogLevel;
  /** Extra base models offered by this deployment (names, GGUF paths or hf: references). */
  baseModels: string[];
  shutdownGraceMs: number;
  /** Entity of the API key created on a first start of the embedded default. */
  bootstrapEntity: string;
  /** Base models scheduled by request priority (others: first come, first served). */
  priorityModels: string[];
  /** The model vLLM's tokenizer endpoints use when a request names none; "" = the first BASE_MODELS entry, else the first built-in. */
  tokenizerDefaultModel: string;
  /** llama.cpp threads per context; 0 = chosen per model (engine/llama/threads.ts). */
  engineThreads: number;
  /** Parallel sequences per llama.cpp context (continuous batching). */
  engineSequences: number;
  /** Cap on each base model's context per sequence; 0: the model's own trained context length. */
  engineContextSize: number;
  /** Requests waiting for a sequence, per base model, before 429. */
  engineMaxQueue: number;
  /** Places in a base model's queue one entity may hold; 0: the whole queue. */
  engineMaxQueuePerEntity: number;
  /** Sequences of a base model one entity may hold; 0: all but one. */
  engineMaxSequencesPerEntity: number;
  /** Generations (chat and completion requests) one entity may have in flight; 0: no limit. */
  entityMaxGenerations: number;
  /** Requests per second one entity may send (a token bucket); 0: no limit. */
  entityRequestsPerSecond: number;
  /** The bucket's size: requests an entity may send at once after a quiet while. */
  entityRequestBurst: number;
  /** Unfinished (queued or running) training jobs one entity may have; 0: no limit. */
  entityMaxJobs: number;
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
  /** Test only: points where the process fails on purpose (core/failpoints.ts). */
  failpoints: Map<string, FailpointAction>;
  /** Hosts SFT jobs may read https training data from. */
  artifactHttpsHosts: string[];
  /** W&B GraphQL: aliases, written field selections, nesting depth and cost one request may have. */
  wandbGraphqlMaxAliases: number;
  wandbGraphqlMaxFields: number;
  wandbGraphqlMaxDepth: number;
  wandbGraphqlMaxCost: number;
  /** W&B GraphQL cost each entity may spend per WANDB_GRAPHQL_BUDGET_WINDOW_MS (then 429). */
  wandbGraphqlEntityBudget: number;
  wandbGraphqlBudgetWindowMs: number;
  /** "types": `__type` lookups only (what the wandb SDK sends); "full": `__schema` too; "off": neither. */
  wandbGraphqlIntrospection: "off" | "types" | "full";
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
  /** Niceness of the local trainer process (0: the service's own priority). */
  trainerNice: number;
  /** Niceness of the embedded engine process (0: the gateway's own priority). */
  engineNice: number;
  /** Shared secret of the TRAINER_URLS trainers (required with them); the local trainer's is DATA_DIR/trainer-secret. */
  trainerSecret: string;
  /** PEM CA bundle trusted for https:// TRAINER_URLS ("" = the system's roots). */
  trainerCaFile: string;
  /** Deadline of each short trainer call (describe, inspect a base model, convert an adapter). */
  trainerCallTimeoutMs: number;
  /** Deadline of a job's trainer work (its Train or Score call, waiting for a free trainer included). */
  trainerJobTimeoutMs: number;
  /** Bearer token of GET /metrics; "": API keys of bootstrapEntity read it. */
  metricsToken: string;
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
  { name: "INFERENCE_BODY_LIMIT_BYTES", default: "8388608", meaning: "largest body of a chat or completion request (8 MiB; JSON escapes can make MAX_PROMPT_BYTES of text several times larger); past it: 413 while reading, before anything is parsed (never more than BODY_LIMIT_BYTES)" },
  { name: "MAX_PROMPT_BYTES", default: "1048576", meaning: "most prompt text one chat or completion request may carry (1 MiB): the UTF-8 bytes of the strings of messages, tools and documents, or of a legacy completion's prompts (4 bytes per token id); over it: 400 before anything is tokenized" },
  { name: "HEADERS_TIMEOUT_MS", default: "20000", meaning: "a new connection's first bytes, and an HTTP/1.1 request's headers, must arrive within this" },
  { name: "REQUEST_TIMEOUT_MS", default: "300000", meaning: "a whole HTTP/1.1 request (headers and body) must arrive within this" },
  { name: "IDLE_TIMEOUT_MS", default: "65000", meaning: "idle keep-alive connections, and HTTP/2 sessions with no open stream, are closed after this" },
  { name: "STALL_TIMEOUT_MS", default: "30000", meaning: "a response (a stream above all) whose client takes nothing of it for this long is cut" },
  { name: "DATABASE_TIMEOUT_MS", default: "2000", meaning: "each database operation, retries included, fails after this (the request answers 503 with Retry-After)" },
  { name: "BLOB_STORE_URL", default: "(unset)", meaning: "where uploads, adapters and trajectory batches are kept (the database holds only their names): unset, files under DATA_DIR/blobs; s3://BUCKET[/PREFIX]?endpoint=http://host:port&region=us-east-1 for any S3-compatible store (credentials from the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY chain; path-style addressing with an endpoint, path_style=false to change it); file:///path for a shared directory" },
  { name: "TINKER_FUTURE_TTL_MS", default: "86400000", meaning: "how long the result of a finished Tinker API request (retrieve_future) is kept after it finished; later retrieves answer 410 (1 day)" },
  { name: "TINKER_RETRIEVE_WAIT_MS", default: "25000", meaning: "how long a Tinker retrieve_future waits for a request still running before it answers 408 (the SDK then asks again; the SDK gives up on one call after 45 s)" },
  { name: "TINKER_ENTITY_MAX_CLIENTS", default: "16", meaning: "Tinker training clients (live LoRA adapters on the trainer) one entity may hold at once; create_model past it answers 429 until one is unloaded (unload_model, closing the SDK's ServiceClient, or its session timing out)" },
  { name: "TINKER_ENTITY_MAX_PENDING", default: "1024", meaning: "unfinished Tinker requests (commands and samples) one entity may have; more answer 429 (the SDK backs off and retries)" },
  { name: "TINKER_SESSION_TIMEOUT_MS", default: "300000", meaning: "a Tinker session whose SDK sent no heartbeat for this long (the SDK sends one every 10 s) is ended and its training clients released; their checkpoints stay" },
  { name: "TINKER_SEQ_GAP_WAIT_MS", default: "5000", meaning: "how long a Tinker command waits for an earlier seq_id of its training client that has not arrived (the SDK sends in order over several connections) before it runs anyway" },
  { name: "BLOB_GRACE_MS", default: "3600000", meaning: "a stored blob that no record names, or what an interrupted upload left, is removed once it is this old (1 h: longer than any upload or commit takes)" },
  { name: "BLOB_COLLECT_EVERY_MS", default: "600000", meaning: "how often each server looks for such blobs (0 = never)" },
  { name: "LOG_LEVEL", default: "info", meaning: "debug, info, warn or error" },
  { name: "BASE_MODELS", default: "(empty)", meaning: "comma-separated extra base models: name=path-or-hf:ref, optionally ;train=hf-directory-or-hf:repo (weights the trainer trains on instead of the GGUF)" },
  { name: "SHUTDOWN_GRACE_MS", default: "10000", meaning: "how long in-flight requests may finish on SIGTERM" },
  { name: "BOOTSTRAP_ENTITY", default: "local", meaning: "entity of the key created on a first embedded start" },
  { name: "METRICS_TOKEN", default: "(unset)", meaning: "bearer token of GET /metrics (Prometheus' `authorization: credentials`); unset: any API key of BOOTSTRAP_ENTITY (the operator's) reads it. Other entities' keys get 403: its labels name every entity" },
  { name: "TOKENIZER_DEFAULT_MODEL", default: "(empty)", meaning: "the model /tokenize, /detokenize and /tokenizer_info use when a request names none (vLLM clients such as lm-eval's remote tokenizer never do); empty = the first BASE_MODELS entry, else the first built-in model" },
  { name: "PRIORITY_MODELS", default: "(empty)", meaning: "comma-separated base models scheduled by request priority" },
  { name: "ENGINE_THREADS", default: "0", meaning: "llama.cpp threads (0 = per model: llama.cpp's own count, its math cores, for a model of 48 MB or more, one fewer, at least 1, for a smaller one); a step decoding a single token runs on one thread fewer where they are chosen so or set to every core" },
  { name: "ENGINE_SEQUENCES", default: "8", meaning: "parallel sequences per context (continuous batching)" },
  { name: "ENGINE_CONTEXT_SIZE", default: "0", meaning: "cap on each base model's context per sequence (prompt + completion of one request); 0 = the model's own trained context length; either way lowered until a context of ENGINE_SEQUENCES fits in ENGINE_CONTEXT_MEMORY_MB (not below 512)" },
  { name: "ENGINE_MAX_QUEUE", default: "64", meaning: "requests waiting per base model before 429; when full, a newcomer whose entity holds fewer places than another takes the newest place of the entity holding most (that request gets the 429)" },
  { name: "ENGINE_MAX_SEQUENCES_PER_ENTITY", default: "0", meaning: "parallel sequences of a base model one entity may hold while it already runs some (0 = all of them while no other entity used the model in the last minute, else all but one, so another entity's request starts at once instead of waiting for a long generation to end; a request whose n is larger still runs when its entity runs nothing)" },
  { name: "ENGINE_MAX_QUEUE_PER_ENTITY", default: "0", meaning: "places in a base model's queue one entity may hold (0 = the whole queue: a lone entity may use all of it)" },
  { name: "ENTITY_MAX_GENERATIONS", default: "64", meaning: "chat and completion requests one entity may have in flight (running or waiting) at once, over all base models, before 429 (0 = no limit)" },
  { name: "ENTITY_REQUESTS_PER_SECOND", default: "100", meaning: "authenticated requests per second one entity may send on average, every route and protocol (0 = no limit); over it: 429 with Retry-After" },
  { name: "ENTITY_REQUEST_BURST", default: "200", meaning: "requests an entity may send at once after a quiet while (the rate limit's bucket)" },
  { name: "ENTITY_MAX_JOBS", default: "100", meaning: "unfinished (queued or running) training jobs one entity may have before 429 (0 = no limit); workers take entities in turn whatever this is" },
  { name: "ENGINE_MAX_CONTEXTS", default: "4", meaning: "loaded contexts (base model + adapter) before LRU eviction" },
  { name: "ENGINE_CONTEXT_MEMORY_MB", default: "0", meaning: "memory for contexts (KV caches, adapters) before LRU eviction; 0 = a quarter of the machine's memory" },
  { name: "ENGINE_HUB_TIMEOUT_MS", default: "30000", meaning: "how long to wait for an hf: model download to start before failing" },
  { name: "ENGINE_BINARY", default: "auto", meaning: "llama.cpp binary of the embedded engine: auto (the build the install checked on real models and linked, .cache/llama-binaries.json; where it crashes twice in a row on a model, node-llama-cpp's prebuilt binary if that passed its check) or prebuilt (always node-llama-cpp's prebuilt binary)" },
  { name: "ENGINE_FAULT_INJECTION", default: "(empty)", meaning: "tests of crash handling only: comma-separated base-model=SIGNAL[@localBuild|@prebuilt]; the engine process kills itself with SIGNAL when it starts generating for that base model (on that binary only, where one is named)" },
  { name: "FAILPOINTS", default: "(empty)", meaning: "tests of crash recovery only: comma-separated point=crash|error; the process kills itself (crash) or fails the operation (error) at that point (points: wandb.commit.leased, wandb.commit.stored, wandb.commit.marked)" },
  { name: "ENGINES", default: "(empty)", meaning: "base models served by llama-server or vLLM replicas instead of the embedded engine: a JSON object keyed by base model name, inline or the path of a JSON file (README: Remote engines)" },
  { name: "TRAINING_WORKER", default: "1", meaning: "run a training worker in the server process (0: only `npm run worker` processes train)" },
  { name: "WORKER_LEASE_MS", default: "30000", meaning: "lease of a worker on a job; a crashed worker's job is retried after it" },
  { name: "WORKER_MAX_ATTEMPTS", default: "2", meaning: "attempts of a job whose worker died before it fails" },
  { name: "TRAINER_URLS", default: "(empty)", meaning: "comma-separated trainers on other machines (http://host:port of `python -m srl_trainer --listen 0.0.0.0:PORT`); empty: each worker starts one local trainer" },
  { name: "TRAINER_PYTHON", default: "(the project's environment)", meaning: "Python interpreter of the local trainer; default .cache/trainer-venv/bin/python, which the install step creates" },
  { name: "TRAINER_THREADS", default: "0", meaning: "CPU threads of the local trainer (0 = every core); the trainer process also reads TRAINER_DEVICE (cpu, cuda, cuda:N) and TRAINER_MICRO_BATCH_TOKENS" },
  { name: "TRAINER_SECRET", default: "(unset)", meaning: "shared secret sent to TRAINER_URLS trainers (required with them; at least 16 characters; start each with the same TRAINER_SECRET); the local trainer's is generated once into DATA_DIR/trainer-secret" },
  { name: "TRAINER_CA_FILE", default: "(unset)", meaning: "PEM CA bundle trusted for https:// TRAINER_URLS (trainers started with --tls-cert/--tls-key); unset: the system's roots" },
  { name: "TRAINER_CALL_TIMEOUT_MS", default: "900000", meaning: "deadline of each short trainer call (describe, inspect a base model, convert an adapter)" },
  { name: "TRAINER_JOB_TIMEOUT_MS", default: "21600000", meaning: "deadline of a job on a trainer (6 h: its Train or Score call, waiting for a free trainer included); past it the job fails naming the limit and a local trainer is restarted" },
  { name: "TRAINER_NICE", default: "10", meaning: "niceness of the local trainer process (0-19): on a machine that also serves, training takes the CPU only as far as the gateway and the engine leave it" },
  { name: "ENGINE_NICE", default: "5", meaning: "niceness of the embedded engine process (0-19, through the nice command where there is one): under load the gateway, which answers every tenant's calls, gets the CPU first" },
  { name: "ARTIFACT_HTTPS_HOSTS", default: "(empty)", meaning: "comma-separated hosts SFT jobs may read https training data from" },
  { name: "WANDB_GRAPHQL_MAX_ALIASES", default: "30", meaning: "W&B GraphQL: aliased fields one query may have (the wandb SDK uses at most 3)" },
  { name: "WANDB_GRAPHQL_MAX_FIELDS", default: "500", meaning: "W&B GraphQL: field selections one query may write (the SDK's largest has under 100)" },
  { name: "WANDB_GRAPHQL_MAX_DEPTH", default: "16", meaning: "W&B GraphQL: nesting depth of a query, fragments expanded (the SDK's deepest: 11)" },
  { name: "WANDB_GRAPHQL_MAX_COST", default: "25000", meaning: "W&B GraphQL: cost of one query: each field 1, a database lookup 10, a list page times its size (`first`, else 1000); the SDK's costliest (a file URL listing) is about 7,000" },
  { name: "WANDB_GRAPHQL_ENTITY_BUDGET", default: "300000", meaning: "W&B GraphQL: cost an entity may spend per budget window (refilled continuously); a query it cannot pay is answered 429 with Retry-After" },
  { name: "WANDB_GRAPHQL_BUDGET_WINDOW_MS", default: "60000", meaning: "W&B GraphQL: the window WANDB_GRAPHQL_ENTITY_BUDGET refills over" },
  { name: "WANDB_GRAPHQL_INTROSPECTION", default: "types", meaning: "W&B GraphQL introspection: types (`__type(name:)` lookups, which the wandb SDK sends to probe the server), full (`__schema` too) or off (`__typename` only; SDK probes then fail)" },
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
    maxPromptBytes: intVar(env, "MAX_PROMPT_BYTES", 1024 * 1024, 1, 2 ** 31 - 1),
    inferenceBodyLimitBytes: intVar(env, "INFERENCE_BODY_LIMIT_BYTES", 8 * 1024 * 1024, 1024, 2 ** 31 - 1),
    headersTimeoutMs: intVar(env, "HEADERS_TIMEOUT_MS", 20_000, 100, 3_600_000),
    requestTimeoutMs: intVar(env, "REQUEST_TIMEOUT_MS", 300_000, 1_000, 86_400_000),
    idleTimeoutMs: intVar(env, "IDLE_TIMEOUT_MS", 65_000, 100, 86_400_000),
    stallTimeoutMs: intVar(env, "STALL_TIMEOUT_MS", 30_000, 100, 86_400_000),
    databaseTimeoutMs: intVar(env, "DATABASE_TIMEOUT_MS", 2_000, 100, 600_000),
    blobStoreUrl: env.BLOB_STORE_URL || "",
    blobGraceMs: intVar(env, "BLOB_GRACE_MS", 3_600_000, 0, 30 * 86_400_000),
    blobCollectEveryMs: intVar(env, "BLOB_COLLECT_EVERY_MS", 600_000, 0, 30 * 86_400_000),
    tinkerFutureTtlMs: intVar(env, "TINKER_FUTURE_TTL_MS", 86_400_000, 1_000, 30 * 86_400_000),
    tinkerRetrieveWaitMs: intVar(env, "TINKER_RETRIEVE_WAIT_MS", 25_000, 0, 40_000),
    tinkerEntityMaxClients: intVar(env, "TINKER_ENTITY_MAX_CLIENTS", 16, 1, 100_000),
    tinkerEntityMaxPending: intVar(env, "TINKER_ENTITY_MAX_PENDING", 1_024, 1, 1_000_000),
    tinkerSessionTimeoutMs: intVar(env, "TINKER_SESSION_TIMEOUT_MS", 300_000, 10_000, 30 * 86_400_000),
    tinkerSeqGapWaitMs: intVar(env, "TINKER_SEQ_GAP_WAIT_MS", 5_000, 0, 600_000),
    logLevel: levelVar(env.LOG_LEVEL),
    baseModels: list(env.BASE_MODELS),
    shutdownGraceMs: intVar(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    bootstrapEntity: env.BOOTSTRAP_ENTITY || "local",
    metricsToken: env.METRICS_TOKEN ?? "",
    artifactHttpsHosts: list(env.ARTIFACT_HTTPS_HOSTS),
    wandbGraphqlMaxAliases: intVar(env, "WANDB_GRAPHQL_MAX_ALIASES", 30, 0, 100_000),
    wandbGraphqlMaxFields: intVar(env, "WANDB_GRAPHQL_MAX_FIELDS", 500, 1, 100_000),
    wandbGraphqlMaxDepth: intVar(env, "WANDB_GRAPHQL_MAX_DEPTH", 16, 2, 1_000),
    wandbGraphqlMaxCost: intVar(env, "WANDB_GRAPHQL_MAX_COST", 25_000, 1, 2 ** 31 - 1),
    wandbGraphqlEntityBudget: intVar(env, "WANDB_GRAPHQL_ENTITY_BUDGET", 300_000, 1, 2 ** 31 - 1),
    wandbGraphqlBudgetWindowMs: intVar(env, "WANDB_GRAPHQL_BUDGET_WINDOW_MS", 60_000, 1_000, 86_400_000),
    wandbGraphqlIntrospection: choiceVar(env, "WANDB_GRAPHQL_INTROSPECTION", ["types", "full", "off"] as const, "types"),
    trainingWorker: (env.TRAINING_WORKER ?? "1") !== "0",
    workerLeaseMs: intVar(env, "WORKER_LEASE_MS", 30_000, 500, 3_600_000),
    workerMaxAttempts: intVar(env, "WORKER_MAX_ATTEMPTS", 2, 1, 100),
    trainerUrls: list(env.TRAINER_URLS),
    trainerPython: env.TRAINER_PYTHON || "",
    trainerThreads: intVar(env, "TRAINER_THREADS", 0, 0, 1024),
    trainerNice: intVar(env, "TRAINER_NICE", 10, 0, 19),
    engineNice: intVar(env, "ENGINE_NICE", 5, 0, 19),
    trainerSecret: env.TRAINER_SECRET ?? "",
    trainerCaFile: env.TRAINER_CA_FILE ?? "",
    trainerCallTimeoutMs: intVar(env, "TRAINER_CALL_TIMEOUT_MS", 900_000, 1_000, 604_800_000),
    trainerJobTimeoutMs: intVar(env, "TRAINER_JOB_TIMEOUT_MS", 21_600_000, 1_000, 604_800_000),
    priorityModels: list(env.PRIORITY_MODELS),
    tokenizerDefaultModel: (env.TOKENIZER_DEFAULT_MODEL ?? "").trim(),
    engineThreads: intVar(env, "ENGINE_THREADS", 0, 0, 256),
    engineSequences: intVar(env, "ENGINE_SEQUENCES", 8, 1, 256),
    engineContextSize: intVar(env, "ENGINE_CONTEXT_SIZE", 0, 0, 1 << 20),
    engineMaxQueue: intVar(env, "ENGINE_MAX_QUEUE", 64, 0, 100_000),
    engineMaxQueuePerEntity: intVar(env, "ENGINE_MAX_QUEUE_PER_ENTITY", 0, 0, 100_000),
    engineMaxSequencesPerEntity: intVar(env, "ENGINE_MAX_SEQUENCES_PER_ENTITY", 0, 0, 256),
    entityMaxGenerations: intVar(env, "ENTITY_MAX_GENERATIONS", 64, 0, 1_000_000),
    entityRequestsPerSecond: intVar(env, "ENTITY_REQUESTS_PER_SECOND", 100, 0, 1_000_000),
    entityRequestBurst: intVar(env, "ENTITY_REQUEST_BURST", 200, 1, 10_000_000),
    entityMaxJobs: intVar(env, "ENTITY_MAX_JOBS", 100, 0, 1_000_000),
    engineMaxContexts: intVar(env, "ENGINE_MAX_CONTEXTS", 4, 1, 64),
    engineContextMemoryMb: intVar(env, "ENGINE_CONTEXT_MEMORY_MB", 0, 0, 1 << 24),
    engineHubTimeoutMs: intVar(env, "ENGINE_HUB_TIMEOUT_MS", 30_000, 100, 3_600_000),
    engineBinary: choiceVar(env, "ENGINE_BINARY", ["auto", "prebuilt"] as const, "auto"),
    engineFaultInjection: faultsVar(env.ENGINE_FAULT_INJECTION),
    engines: parseEngines(env.ENGINES),
    failpoints: parseFailpoints(env.FAILPOINTS),
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
