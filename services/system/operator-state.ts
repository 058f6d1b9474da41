// The operator's view of engines and queues (GetOperatorState): the gauges /metrics exposes, after
// the same scrape-time sources ran, regrouped per base model and per entity. Reading the registry
// rather than the engines keeps one source of truth: what the page shows is what Prometheus scrapes.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { MetricObjectWithValues, MetricValue } from "prom-client";
import type { OperatorStateSchema } from "../../gen/srl/v1/system_pb.js";
import { refreshSources, registry } from "../core/metrics/index.js";

type Values = MetricValue<string>[];
type OperatorStateInit = MessageInitShape<typeof OperatorStateSchema>;

export async function readOperatorState(): Promise<OperatorStateInit> {
  await refreshSources();
  const metrics = new Map<string, Values>();
  for (const metric of (await registry.getMetricsAsJSON()) as MetricObjectWithValues<MetricValue<string>>[]) metrics.set(metric.name, metric.values);
  const values = (name: string): Values => metrics.get(name) ?? [];
  const total = (name: string) => values(name).reduce((sum, value) => sum + value.value, 0);

  const models = new Map<string, NonNullable<OperatorStateInit["models"]>[number]>();
  const model = (name: string) => {
    let load = models.get(name);
    if (!load) models.set(name, (load = { modelName: name, requestsRunning: 0, requestsWaiting: 0, kvCacheUsage: 0, contexts: 0, loadedAdapters: 0, replicas: 0, sequencesInUse: 0, sequencesTotal: 0 }));
    return load;
  };
  const entities = new Map<string, NonNullable<OperatorStateInit["entities"]>[number]>();
  const entity = (name: string) => {
    let load = entities.get(name);
    if (!load) entities.set(name, (load = { entity: name, requestsRunning: 0, requestsWaiting: 0, jobsQueued: 0, jobsRunning: 0, jobsSucceeded: 0, jobsFailed: 0 }));
    return load;
  };
  const label = (value: MetricValue<string>, name: string) => String(value.labels[name] ?? "");
  const count = (value: MetricValue<string>) => Math.round(value.value);

  for (const value of values("vllm:num_requests_running")) {
    (model(label(value, "model_name")).requestsRunning as number) += count(value);
    (entity(label(value, "entity")).requestsRunning as number) += count(value);
  }
  for (const value of values("vllm:num_requests_waiting")) {
    (model(label(value, "model_name")).requestsWaiting as number) += count(value);
    (entity(label(value, "entity")).requestsWaiting as number) += count(value);
  }
  for (const value of values("vllm:kv_cache_usage_perc")) model(label(value, "model_name")).kvCacheUsage = value.value;
  for (const value of values("srl:engine_contexts")) (model(label(value, "model_name")).contexts as number) += count(value);
  for (const value of values("srl:engine_loaded_adapters")) (model(label(value, "model_name")).loadedAdapters as number) += count(value);
  for (const value of values("srl:engine_replicas")) (model(label(value, "model_name")).replicas as number) += count(value);
  for (const value of values("srl:engine_sequences")) {
    const load = model(label(value, "model_name"));
    if (label(value, "state") === "in_use") (load.sequencesInUse as number) += count(value);
    else if (label(value, "state") === "total") (load.sequencesTotal as number) += count(value);
  }
  const jobField = { queued: "jobsQueued", running: "jobsRunning", succeeded: "jobsSucceeded", failed: "jobsFailed" } as const;
  for (const value of values("srl:training_jobs")) {
    const field = jobField[label(value, "status") as keyof typeof jobField];
    if (field) (entity(label(value, "entity"))[field] as number) += count(value);
  }
  const ping = values("srl:database_ping_seconds")[0];
  return {
    readAt: new Date().toISOString(),
    databaseUp: total("srl:database_up") > 0,
    databasePingSeconds: ping?.value,
    engines: values("srl:engine_up").map((value) => ({ engine: label(value, "engine"), replica: label(value, "replica"), up: value.value > 0 })),
    models: [...models.values()].filter((load) => load.modelName !== "").sort((a, b) => String(a.modelName).localeCompare(String(b.modelName))),
    // Gauges keep a zero series for every entity seen since start: only entities with something to show.
    entities: [...entities.values()]
      .filter((load) => load.entity !== "" && (load.requestsRunning || load.requestsWaiting || load.jobsQueued || load.jobsRunning || load.jobsSucceeded || load.jobsFailed))
      .sort((a, b) => String(a.entity).localeCompare(String(b.entity))),
    engineStarts: Math.round(total("srl:engine_starts_total")),
    engineExits: Math.round(total("srl:engine_exits_total")),
    refusedModels: Math.round(total("srl:engine_refused_models")),
  };
}
