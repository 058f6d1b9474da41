// The fuzz suite's server and bookkeeping: an isolated server with two entities' keys and a few
// real objects of each, failures grouped into a short report with reproducible examples, the
// server's log read for unhandled rejections and uncaught exceptions, and a server that died
// started again (recorded as a failure) so later batches still run.
import { open, stat } from "node:fs/promises";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { TEST_DATABASE_TIMEOUT_MS } from "./db-timeout.js";
import { startIsolatedServer, type IsolatedServer } from "./isolated-server.js";
import { startServerProcess } from "./server-process.js";
import { RawHttp, RawHttp2, type RawRequest, type RawResponse } from "./fuzz-http.js";
import type { FuzzTargets, Owner, TargetModel } from "./fuzz-messages.js";

export const ENTITY_A = "fuzz-alpha";
export const ENTITY_B = "fuzz-beta";
const SERVER_NAME = "fuzz";
/**
 * Jobs stay queued (no worker): the fuzzer aims at them without training anything. The fuzzer
 * judges how input is handled, not database latency: with the whole suite on two cores sharing one
 * FerretDB, an upload's operations queued past the default 2 s and came back 503 (database
 * unavailable), which the fuzzer counts as a failure. database-faults.test.ts covers the 503 path.
 */
// No request-rate limit: the fuzzer sends hundreds of requests a second with one key, and each
// must reach the handlers it is aimed at (test/gateway/tenants.test.ts covers the limit).
const SERVER_ENV = { TRAINING_WORKER: "0", LOG_LEVEL: "info", DATABASE_TIMEOUT_MS: String(TEST_DATABASE_TIMEOUT_MS), ENTITY_REQUESTS_PER_SECOND: "0" };

export interface Failure {
  batch: string;
  property: string;
  label: string;
  status: string;
  repro: string;
}

export interface Tally {
  count: number;
  ms: number;
  histogram: Map<string, number>;
}

const newTally = (): Tally => ({ count: 0, ms: 0, histogram: new Map() });

export class FuzzHarness {
  readonly http: RawHttp;
  readonly http2: RawHttp2;
  readonly failures: Failure[] = [];
  readonly tallies = { rest: newTally(), rpc: newTally() };
  targets!: FuzzTargets;
  private logOffset = 0;
  /** Error-level lines the server logged (other than the two above), with counts: what the 5xx were. */
  readonly serverErrors = new Map<string, number>();
  private revivals = 0;

  private constructor(readonly iso: IsolatedServer) {
    this.http = new RawHttp(() => ({ host: "127.0.0.1", port: this.iso.server.port }));
    this.http2 = new RawHttp2(() => this.iso.server.url);
  }

  static async start(): Promise<FuzzHarness> {
    const iso = await startIsolatedServer({ name: SERVER_NAME, entity: ENTITY_A, env: SERVER_ENV });
    const harness = new FuzzHarness(iso);
    harness.targets = await harness.createTargets();
    return harness;
  }

  get url(): string {
    return this.iso.server.url;
  }

  /** A request with the API key of `who`, expecting a JSON answer with a 2xx status. */
  private async setupCall(who: Owner, method: string, target: string, body?: unknown, raw?: Buffer): Promise<Record<string, unknown>> {
    const key = who === "a" ? this.iso.key : this.keyB;
    const res = await this.http.send({
      method,
      target,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined || raw ? { "content-type": raw ? "application/octet-stream" : "application/json" } : {}) },
      body: raw ?? (body !== undefined ? Buffer.from(JSON.stringify(body)) : undefined),
    });
    if (res.status < 200 || res.status >= 300) throw new Error(`fuzz setup: ${method} ${target} answered ${res.status}: ${res.body.toString("utf8").slice(0, 300)}`);
    return JSON.parse(res.body.toString("utf8")) as Record<string, unknown>;
  }

  private keyB = "";

  /** Models (with their runs and step-0 checkpoints), an uploaded artifact and queued jobs of each entity. */
  private async createTargets(): Promise<FuzzTargets> {
    this.keyB = (await new ApiKeys(this.iso.db.db).create(ENTITY_B)).key;
    const t: FuzzTargets = {
      entity: { a: ENTITY_A, b: ENTITY_B },
      key: { a: this.iso.key, b: this.keyB },
      models: { a: [], b: [] },
      jobs: { a: [], b: [] },
      artifactUrls: { a: [], b: [] },
    };
    const plan: [Owner, string, string][] = [
      ["a", "pa", "ma0"],
      ["a", "pa", "ma1"],
      ["b", "pb", "mb0"],
    ];
    for (const [who, project, name] of plan) {
      const model = await this.setupCall(who, "POST", "/v1/preview/models", { project, name, base_model: "tiny-chat" });
      const id = String(model.id);
      const checkpoints = await this.setupCall(who, "GET", `/v1/preview/models/${id}/checkpoints`);
      const data = (checkpoints.data as { id: string }[] | undefined) ?? [];
      const entry: TargetModel = { id, project, name, runId: String(model.run_id), checkpointIds: data.map((c) => c.id) };
      t.models[who].push(entry);
    }
    const jsonl = Buffer.from('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n');
    for (const who of ["a", "b"] as const) {
      const project = who === "a" ? "pa" : "pb";
      const artifact = await this.setupCall(who, "POST", `/v1/preview/artifacts?project=${project}&name=data&filename=train.jsonl`, undefined, jsonl);
      t.artifactUrls[who].push(String(artifact.url));
      const model = t.models[who][0] as TargetModel;
      const rl = await this.setupCall(who, "POST", "/v1/preview/training-jobs", {
        model_id: model.id,
        trajectory_groups: [{ trajectories: [{ messages_and_choices: [{ role: "user", content: "hi" }, { role: "assistant", content: "yo" }], reward: 1 }] }],
      });
      t.jobs[who].push(String(rl.id));
      const sft = await this.setupCall(who, "POST", "/v1/preview/sft-training-jobs", { model_id: model.id, training_data_url: artifact.url });
      t.jobs[who].push(String(sft.id));
    }
    return t;
  }

  /** Replaces API keys in a text by placeholders, for reports. */
  redact(text: string): string {
    return text.replaceAll(this.targets.key.a, "$KEY_A").replaceAll(this.targets.key.b, "$KEY_B");
  }

  describeRest(req: RawRequest, res: RawResponse, bodyKind: string): string {
    const body = req.body ? `${JSON.stringify(req.body.subarray(0, 600).toString("utf8").slice(0, 300))}${req.body.length > 300 ? `… (${req.body.length} bytes)` : ""}` : "none";
    const answer = res.error && !res.cut ? `no answer (${res.error})` : `${res.status} ${JSON.stringify(res.body.toString("utf8").slice(0, 300))}${res.length > 300 ? `… (${res.length} bytes)` : ""}`;
    const target = req.target.length > 300 ? `${req.target.slice(0, 300)}… (${req.target.length} chars)` : req.target;
    return this.redact(`${req.method} ${target} headers=${JSON.stringify(req.headers)} body[${bodyKind}]=${body} -> ${answer}`);
  }

  record(tally: Tally, key: string, ms: number): void {
    tally.count++;
    tally.ms += ms;
    tally.histogram.set(key, (tally.histogram.get(key) ?? 0) + 1);
  }

  async healthy(): Promise<boolean> {
    if (this.iso.server.child.exitCode !== null || this.iso.server.child.signalCode !== null) return false;
    const res = await this.http.send({ method: "GET", target: "/v1/health", headers: {} });
    return res.status === 200;
  }

  /**
   * After a batch: the process is alive and /v1/health answers, and the log has no unhandled
   * rejection or uncaught exception since the last check. Returns the failures found; a dead
   * server is started again so later batches run.
   */
  async afterBatch(batch: string): Promise<Failure[]> {
    const found: Failure[] = [];
    const exit = this.iso.server.child.exitCode ?? this.iso.server.child.signalCode;
    if (exit !== null) found.push({ batch, property: "server process exited", label: batch, status: String(exit), repro: `exit ${exit} during "${batch}"; see the log lines below` });
    else if (!(await this.healthy())) found.push({ batch, property: "/v1/health does not answer 200", label: batch, status: "-", repro: `after "${batch}"` });
    found.push(...(await this.logFailures(batch)));
    if (exit !== null) await this.revive();
    this.failures.push(...found);
    return found;
  }

  /** Lines logged since the last call whose msg is "unhandled rejection" or "uncaught exception". */
  async logFailures(batch: string): Promise<Failure[]> {
    const handle = await open(this.iso.server.logFile, "r");
    let text: string;
    try {
      const { size } = await handle.stat();
      const buffer = Buffer.alloc(Math.max(0, size - this.logOffset));
      await handle.read(buffer, 0, buffer.length, this.logOffset);
      this.logOffset = size;
      text = buffer.toString("utf8");
    } finally {
      await handle.close();
    }
    const out: Failure[] = [];
    for (const line of text.split("\n")) {
      if (!line.startsWith("{")) continue;
      let entry: { msg?: unknown; level?: unknown; error?: { message?: unknown; stack?: unknown } };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        continue;
      }
      const stack = typeof entry.error?.stack === "string" ? entry.error.stack.split("\n").slice(0, 4).join(" | ") : JSON.stringify(entry.error ?? null);
      if (entry.msg === "unhandled rejection" || entry.msg === "uncaught exception") {
        out.push({ batch, property: `log: ${entry.msg}`, label: batch, status: "-", repro: stack.slice(0, 600) });
      } else if (entry.level === "error") {
        const key = `${String(entry.msg)}: ${stack.slice(0, 400)}`;
        this.serverErrors.set(key, (this.serverErrors.get(key) ?? 0) + 1);
      }
    }
    return out;
  }

  private async revive(): Promise<void> {
    this.revivals++;
    const server = await startServerProcess({
      DATA_DIR: this.iso.dataDir,
      MONGODB_URI: this.iso.database.uri,
      MONGODB_DB: `srl_${SERVER_NAME}`,
      ENGINE_THREADS: "1",
      ...SERVER_ENV,
    });
    this.iso.server = server;
    const { size } = await stat(server.logFile).catch(() => ({ size: 0 }));
    this.logOffset = Math.min(this.logOffset, size);
  }

  get timesRevived(): number {
    return this.revivals;
  }

  async stop(): Promise<void> {
    this.http.close();
    this.http2.close();
    await this.iso.stop();
  }
}

/** Failures grouped by property, route and status, with up to `examples` reproductions each. */
export function formatFailures(failures: Failure[], examples = 2): string {
  const groups = new Map<string, Failure[]>();
  for (const f of failures) {
    const key = `${f.property} | ${f.label} | ${f.status}`;
    const list = groups.get(key) ?? [];
    list.push(f);
    groups.set(key, list);
  }
  const lines: string[] = [`${failures.length} failures in ${groups.size} groups:`];
  for (const [key, list] of groups) {
    lines.push(`- ${key}  (x${list.length})`);
    for (const f of list.slice(0, examples)) lines.push(`    ${f.repro}`);
  }
  return lines.join("\n");
}

export function histogramText(h: Map<string, number>): string {
  return [...h.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k}: ${n}`)
    .join(", ");
}
