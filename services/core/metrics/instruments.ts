// Every metric the service exposes. Where vLLM has a metric of the same meaning it keeps vLLM's
// exact name and its `model_name` label, so dashboards and alerts written for vLLM work unchanged;
// the rest is `srl:`. `entity` labels are for the operator only (/metrics is not a tenant route).
import { Counter, Gauge, Histogram } from "prom-client";
import { registry } from "./registry.js";

const registers = [registry];
const MODEL = ["model_name", "entity"] as const;

// vLLM's buckets (vllm/v1/metrics/loggers.py), so quantiles compare across both.
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];

// Generation (engine/inference-engine.ts, every engine).
export const requestsRunning = new Gauge({ name: "vllm:num_requests_running", help: "Chat and completion requests generating (admitted by the engine).", labelNames: MODEL, registers });
export const requestsWaiting = new Gauge({ name: "vllm:num_requests_waiting", help: "Chat and completion requests waiting for the engine (queued, or evaluating their prompt).", labelNames: MODEL, registers });
export const promptTokens = new Counter({ name: "vllm:prompt_tokens_total", help: "Prompt tokens of finished generations.", labelNames: MODEL, registers });
export const generationTokens = new Counter({ name: "vllm:generation_tokens_total", help: "Generated tokens of finished generations.", labelNames: MODEL, registers });
export const requestSuccess = new Counter({ name: "vllm:request_success_total", help: "Finished choices by finish reason.", labelNames: [...MODEL, "finished_reason"] as const, registers });
export const generationFailures = new Counter({ name: "srl:generation_failures_total", help: "Generations that ended in an error, by the error's code.", labelNames: [...MODEL, "code"] as const, registers });
export const timeToFirstToken = new Histogram({ name: "vllm:time_to_first_token_seconds", help: "Time from the engine call to the first generated token.", labelNames: MODEL, buckets: TTFT_BUCKETS, registers });
export const interTokenLatency = new Histogram({ name: "vllm:inter_token_latency_seconds", help: "Time between two generated tokens of one choice.", labelNames: MODEL, buckets: ITL_BUCKETS, registers });
export const e2eLatency = new Histogram({ name: "vllm:e2e_request_latency_seconds", help: "Time from the engine call to the generation's end.", labelNames: MODEL, buckets: REQUEST_LATENCY_BUCKETS, registers });

// Every RPC on every protocol (gateway/pipeline.ts).
export const apiRequests = new Counter({ name: "srl:requests_total", help: "API requests by endpoint (RPC), entity and status class of their outcome (2xx, 4xx, 5xx).", labelNames: ["endpoint", "entity", "status_class"] as const, registers });

// Engines, read at scrape time.
export const kvCacheUsage = new Gauge({ name: "vllm:kv_cache_usage_perc", help: "Fraction of the loaded contexts' KV cells held by running sequences (1 = full).", labelNames: ["model_name"] as const, registers });
export const engineSequences = new Gauge({ name: "srl:engine_sequences", help: "Sequences (context slots) of the loaded contexts, by state (in_use, total).", labelNames: ["model_name", "state"] as const, registers });
export const engineContexts = new Gauge({ name: "srl:engine_contexts", help: "Loaded contexts (base model + adapter) of the embedded engine.", labelNames: ["model_name"] as const, registers });
export const loadedAdapters = new Gauge({ name: "srl:engine_loaded_adapters", help: "LoRA adapters loaded on an engine (embedded contexts with one, or on remote replicas).", labelNames: ["model_name", "engine"] as const, registers });
export const engineUp = new Gauge({ name: "srl:engine_up", help: "1 when the engine serves (embedded: its process runs or starts on demand and no model is refused; remote: the replica's last health check passed).", labelNames: ["engine", "replica"] as const, registers });
export const engineReplicas = new Gauge({ name: "srl:engine_replicas", help: "Remote replicas per base model.", labelNames: ["model_name"] as const, registers });
export const engineExits = new Counter({ name: "srl:engine_exits_total", help: "Unexpected exits of the embedded engine process, by signal (or exit code); the next request restarts it.", labelNames: ["reason"] as const, registers });
export const engineStarts = new Counter({ name: "srl:engine_starts_total", help: "Starts of the embedded engine process (restarts are this minus 1).", registers });
export const refusedModels = new Gauge({ name: "srl:engine_refused_models", help: "Base models refused after crashing the embedded engine twice in a row.", registers });

// Training.
export const trainingJobs = new Gauge({ name: "srl:training_jobs", help: "Training jobs by entity, type and status (read from the database at scrape time).", labelNames: ["entity", "type", "status"] as const, registers });
export const trainingStepDuration = new Histogram({
  name: "srl:training_step_duration_seconds",
  help: "Time of each optimizer step of jobs run by this process's training worker (the first from the job's start on the trainer).",
  labelNames: ["type"] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
  registers,
});

// The database, read at scrape time.
export const databaseUp = new Gauge({ name: "srl:database_up", help: "1 when the database answered a ping during this scrape.", registers });
export const databasePing = new Gauge({ name: "srl:database_ping_seconds", help: "Round trip of that ping (absent when it failed).", registers });
export const databaseRestarts = new Gauge({ name: "srl:database_restarts", help: "Restarts of the embedded database by its supervisor.", registers });
