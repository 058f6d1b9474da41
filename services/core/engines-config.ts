// ENGINES (part of config.ts): which base models of the catalog run on servers other than the
// embedded llama.cpp, and how to reach them. A JSON object (inline, or the path of a file holding
// it) keyed by base model name; README "Remote engines" documents every field.
import { readFileSync } from "node:fs";

export type BackendKind = "llama-server" | "vllm";

export interface LaunchSettings {
  /** How many llama-server processes this service runs on this machine. */
  count: number;
  /** The llama-server executable (a path, or a name on PATH). */
  binary: string;
  /** llama.cpp threads per process (`-t`); 0 = llama-server's own default. */
  threads: number;
  /** Parallel slots per process (`-np`). */
  slots: number;
  /** Context per slot; 0 = the model's trained length (capped at 4096 per slot). */
  contextPerSlot: number;
  /** Further command-line arguments, as they are. */
  args: string[];
}

export interface RemoteEngineSettings {
  base: string;
  kind: BackendKind;
  /** Servers someone else runs: base URLs such as http://10.0.0.5:8080. */
  replicas: string[];
  /** llama-server only: replicas this service starts, supervises and restarts to load adapters. */
  launch: LaunchSettings | null;
  /** The base model's name on a vLLM server; "" = the root model its /v1/models lists. */
  servedModelName: string;
  /** A bearer token the servers want ("" = none). */
  apiKey: string;
  /** Where this service writes adapter files for the replicas (shared storage); "" = DATA_DIR/adapters as is. */
  adapterDir: string;
  /** The same directory as the replicas see it; "" = adapterDir. */
  replicaAdapterDir: string;
  /** Adapters kept loaded per replica; the least recently used one goes first. */
  maxAdapters: number;
  healthIntervalMs: number;
  /** A replica must answer a request's headers (or a health check) within this. */
  connectTimeoutMs: number;
}

const FIELDS = new Set(["kind", "replicas", "launch", "servedModelName", "apiKey", "adapterDir", "replicaAdapterDir", "maxAdapters", "healthIntervalMs", "connectTimeoutMs"]);
const LAUNCH_FIELDS = new Set(["count", "binary", "threads", "slots", "contextPerSlot", "args"]);

/** Parses ENGINES; throws an Error naming the offending entry and field. */
export function parseEngines(raw: string | undefined): RemoteEngineSettings[] {
  const text = (raw ?? "").trim();
  if (!text) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(/^[[{]/.test(text) ? text : readFileSync(text, "utf8"));
  } catch (error) {
    throw new Error(`ENGINES: not a JSON object or a readable JSON file (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!isObject(parsed)) throw new Error("ENGINES: must be a JSON object keyed by base model name");
  return Object.entries(parsed).map(([base, value]) => parseEntry(base, value));
}

function parseEntry(base: string, value: unknown): RemoteEngineSettings {
  const where = `ENGINES["${base}"]`;
  if (!isObject(value)) throw new Error(`${where}: must be an object`);
  for (const key of Object.keys(value)) if (!FIELDS.has(key)) throw new Error(`${where}: unknown field "${key}" (known: ${[...FIELDS].join(", ")})`);
  const kind = value.kind;
  if (kind !== "llama-server" && kind !== "vllm") throw new Error(`${where}.kind: "llama-server" or "vllm"`);
  const replicas = value.replicas ?? [];
  if (!Array.isArray(replicas) || !replicas.every((url) => typeof url === "string" && /^https?:\/\/[^/\s]+/.test(url))) {
    throw new Error(`${where}.replicas: an array of http(s) base URLs`);
  }
  const launch = value.launch === undefined ? null : parseLaunch(where, value.launch);
  if (launch && kind !== "llama-server") throw new Error(`${where}.launch: only llama-server replicas can be started by this service`);
  if (replicas.length === 0 && !launch) throw new Error(`${where}: give replicas (URLs) or launch (llama-server processes started here)`);
  return {
    base,
    kind,
    replicas: (replicas as string[]).map((url) => url.replace(/\/+$/, "")),
    launch,
    servedModelName: str(where, value, "servedModelName"),
    apiKey: str(where, value, "apiKey"),
    adapterDir: str(where, value, "adapterDir"),
    replicaAdapterDir: str(where, value, "replicaAdapterDir"),
    maxAdapters: int(where, value, "maxAdapters", 4, 1, 1024),
    healthIntervalMs: int(where, value, "healthIntervalMs", 2000, 100, 600_000),
    connectTimeoutMs: int(where, value, "connectTimeoutMs", 10_000, 100, 600_000),
  };
}

function parseLaunch(where: string, value: unknown): LaunchSettings {
  if (!isObject(value)) throw new Error(`${where}.launch: must be an object`);
  for (const key of Object.keys(value)) if (!LAUNCH_FIELDS.has(key)) throw new Error(`${where}.launch: unknown field "${key}" (known: ${[...LAUNCH_FIELDS].join(", ")})`);
  const args = value.args ?? [];
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) throw new Error(`${where}.launch.args: an array of strings`);
  return {
    count: int(`${where}.launch`, value, "count", 1, 1, 64),
    binary: str(`${where}.launch`, value, "binary") || "llama-server",
    threads: int(`${where}.launch`, value, "threads", 0, 0, 1024),
    slots: int(`${where}.launch`, value, "slots", 4, 1, 256),
    contextPerSlot: int(`${where}.launch`, value, "contextPerSlot", 0, 0, 1 << 20),
    args: args as string[],
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(where: string, value: Record<string, unknown>, key: string): string {
  const field = value[key];
  if (field === undefined) return "";
  if (typeof field !== "string") throw new Error(`${where}.${key}: must be a string`);
  return field;
}

function int(where: string, value: Record<string, unknown>, key: string, fallback: number, min: number, max: number): number {
  const field = value[key];
  if (field === undefined) return fallback;
  if (typeof field !== "number" || !Number.isInteger(field) || field < min || field > max) throw new Error(`${where}.${key}: an integer from ${min} to ${max}`);
  return field;
}
