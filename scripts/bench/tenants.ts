// `npm run bench:tenants`: two entities on one service. Entity B runs a steady light load (a chat
// completion, a model list and a W&B GraphQL query in turn, one every BENCH_INTERVAL_MS, plus one
// RL training job); first alone, then while entity A floods the service: 80 concurrent long
// streams, 30 MiB prompts, 40 queued training jobs, 400-alias GraphQL queries and a flood of
// cheap calls. Prints B's p50/p95 latency, error rate and job start delay in both phases, the
// ratios flooded / alone, what A got back (by status), and whether the service stayed up.
// Goals (issue 34): B's p95 within 2x of alone, 0 errors for B, A's excess answered 429.
// BENCH_SECONDS (default 20) per phase. Uses its own database, data directory and trainer
// BENCH_FLOOD=streams,prompts,jobs,graphql,calls picks parts of A's flood (default all).
// (BENCH_KEEP=1 keeps them, with the server's log; BENCH_LOG_LEVEL sets its level, default warn).
import { niceCommand } from "../../services/core/child-process.js";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { connectDatabase } from "../../services/store/mongo.js";
import { startEmbeddedDatabase } from "../../services/store/launcher.js";
import { startServerProcess } from "../../test/support/server-process.js";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { percentile } from "./stats.js";
import { sleep, tenantCalls } from "./tenant-calls.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const INTERVAL_MS = Number(process.env.BENCH_INTERVAL_MS ?? 200);
/** Which parts of A's flood run (BENCH_FLOOD, comma-separated; default all). */
const FLOOD = (process.env.BENCH_FLOOD ?? "streams,prompts,jobs,graphql,calls").split(",");

interface Sample {
  op: string;
  ms: number;
  ok: boolean;
  status: number;
}

const dataDir = await mkdtemp(join(tmpdir(), "srl-bench-tenants-"));
const database = await startEmbeddedDatabase({ dataDir, log: () => {} });
const server = await startServerProcess({ DATA_DIR: dataDir, MONGODB_URI: database.uri, MONGODB_DB: "bench", LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "warn" });
const url = server.url;
const db = await connectDatabase(database.uri, "bench");
const keyA = (await new ApiKeys(db.db).create("flooder")).key;
const keyB = (await new ApiKeys(db.db).create("steady")).key;
await db.close();

const callsOf = { [keyA]: tenantCalls(url, keyA), [keyB]: tenantCalls(url, keyB) };
const json = (key: string, method: string, path: string, body?: unknown) => callsOf[key]!.json(method, path, body);
const createJob = (key: string, modelId: string) => callsOf[key]!.createJob(modelId);
const registerModel = async (key: string, name: string) => (await json(key, "POST", "/v1/preview/models", { project: "bench", name, base_model: "tiny-chat" })).body?.id as string;

/** B's light load: one call every INTERVAL_MS, in turn, until `until`. */
async function steadyLoad(until: number): Promise<Sample[]> {
  const samples: Sample[] = [];
  const ops: [string, () => Promise<number>][] = [
    ["chat", async () => (await json(keyB, "POST", "/v1/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "Hello" }], max_tokens: 8 })).status],
    ["list", async () => (await json(keyB, "GET", "/v1/preview/models")).status],
    [
      "graphql",
      async () =>
        (
          await fetch(`${url}/graphql`, {
            method: "POST",
            headers: { authorization: `Basic ${Buffer.from(`api:${keyB}`).toString("base64")}`, "content-type": "application/json" },
            body: JSON.stringify({ query: "query Viewer { viewer { id username entity } }" }),
          })
        ).status,
    ],
  ];
  const pending: Promise<void>[] = [];
  for (let i = 0; Date.now() < until; i++) {
    const [op, call] = ops[i % ops.length]!;
    const started = performance.now();
    pending.push(
      call().then(
        (status) => void samples.push({ op, ms: performance.now() - started, ok: status >= 200 && status < 300, status }),
        () => void samples.push({ op, ms: performance.now() - started, ok: false, status: 0 }),
      ),
    );
    await sleep(INTERVAL_MS);
  }
  await Promise.all(pending);
  return samples;
}

/** B's job: seconds from creation until a worker runs it, and until it has ended. */
async function jobDelays(modelId: string, deadline: number): Promise<{ startS: number; endS: number; status: string }> {
  const started = performance.now();
  const created = await createJob(keyB, modelId);
  const id = created.body?.id as string | undefined;
  if (!id) return { startS: NaN, endS: NaN, status: `create ${created.status}` };
  let startS = NaN;
  for (;;) {
    const job = (await json(keyB, "GET", `/v1/preview/training-jobs/${id}`)).body ?? {};
    const status = String(job.status);
    if (Number.isNaN(startS) && status !== "queued") startS = (performance.now() - started) / 1000;
    if (status === "succeeded" || status === "failed") return { startS, endS: (performance.now() - started) / 1000, status };
    if (Date.now() > deadline) return { startS, endS: NaN, status: `${status} at the deadline` };
    await sleep(100);
  }
}

/**
 * A's flood, from a process of its own at the lowest CPU priority: A's client stands for
 * machines elsewhere, so its own work (80 streams to read, 30 MiB bodies to send) must not be
 * what slows B on this machine; every request it sends still reaches the service.
 */
async function flood(seconds: number, modelIds: string[]): Promise<Map<string, number>> {
  const script = join(import.meta.dirname, "tenants-flood.ts");
  const nice = niceCommand();
  const command = nice ? [nice, "-n", "19", process.execPath] : [process.execPath];
  const child = spawn(command[0]!, [...command.slice(1), "--import", "tsx", script], {
    env: { ...process.env, FLOOD_URL: url, FLOOD_KEY: keyA, FLOOD_MODELS: modelIds.join(","), FLOOD_SECONDS: String(seconds), FLOOD_PARTS: FLOOD.join(",") },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  if (code !== 0) throw new Error(`the flood process exited with ${code}`);
  return new Map(Object.entries(JSON.parse(out.trim().split("\n").pop() as string) as Record<string, number>));
}

function summary(samples: Sample[]) {
  const ms = samples.map((s) => s.ms);
  return { count: samples.length, errors: samples.filter((s) => !s.ok).length, p50: percentile(ms, 50), p95: percentile(ms, 95), statuses: [...new Set(samples.filter((s) => !s.ok).map((s) => s.status))] };
}

try {
  const modelB = await registerModel(keyB, "steady-model");
  const modelsA = await Promise.all([0, 1, 2, 3].map((i) => registerModel(keyA, `flood-${i}`)));
  process.stderr.write("warming up (model, context, trainer)\n");
  await json(keyB, "POST", "/v1/chat/completions", { model: "tiny-chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 4 });
  await jobDelays(modelB, Date.now() + 600_000);

  process.stderr.write(`phase 1: B alone for ${SECONDS} s\n`);
  let until = Date.now() + SECONDS * 1000;
  const [aloneSamples, aloneJob] = await Promise.all([steadyLoad(until), sleep(2_000).then(() => jobDelays(modelB, until + 600_000))]);

  process.stderr.write(`phase 2: B while A floods for ${SECONDS} s\n`);
  until = Date.now() + SECONDS * 1000;
  const [floodedSamples, floodedJob, answersA] = await Promise.all([steadyLoad(until), sleep(4_000).then(() => jobDelays(modelB, until + 600_000)), flood(SECONDS, modelsA)]);
  const health = await fetch(`${url}/v1/health`).then((r) => r.status, () => 0);
  const alive = server.child.exitCode === null && health === 200;

  const alone = summary(aloneSamples);
  const flooded = summary(floodedSamples);
  const line = (name: string, s: ReturnType<typeof summary>, job: { startS: number; endS: number; status: string }) =>
    `${name.padEnd(12)} ${String(s.count).padStart(6)} ${String(s.errors).padStart(7)} ${s.p50.toFixed(0).padStart(8)} ${s.p95.toFixed(0).padStart(8)} ${job.startS.toFixed(2).padStart(12)} ${job.endS.toFixed(2).padStart(10)} ${job.status}`;
  console.log(`\nB's steady load (one call every ${INTERVAL_MS} ms: chat, list, graphql) and one RL job, ${SECONDS} s per phase`);
  console.log(`${"phase".padEnd(12)} ${"calls".padStart(6)} ${"errors".padStart(7)} ${"p50 ms".padStart(8)} ${"p95 ms".padStart(8)} ${"job start s".padStart(12)} ${"job end s".padStart(10)}`);
  console.log(line("B alone", alone, aloneJob));
  console.log(line("A flooding", flooded, floodedJob));
  console.log(`ratio flooded / alone: p50 x${(flooded.p50 / alone.p50).toFixed(2)}, p95 x${(flooded.p95 / alone.p95).toFixed(2)} (goal: p95 within x2.00), B errors ${flooded.errors}${flooded.statuses.length ? ` (statuses ${flooded.statuses.join(", ")})` : ""} (goal: 0)`);
  for (const op of ["chat", "list", "graphql"]) {
    const [a, f] = [summary(aloneSamples.filter((s) => s.op === op)), summary(floodedSamples.filter((s) => s.op === op))];
    console.log(`  ${op.padEnd(8)} p50 ${a.p50.toFixed(0)} -> ${f.p50.toFixed(0)} ms, p95 ${a.p95.toFixed(0)} -> ${f.p95.toFixed(0)} ms`);
  }
  console.log("A's answers by status:");
  for (const [what, n] of [...answersA].sort()) console.log(`  ${what.padEnd(26)} ${n}`);
  console.log(`service alive after the flood: ${alive ? "yes" : "NO"} (health ${health})`);
} finally {
  await server.stop();
  await database.stop();
  if (process.env.BENCH_KEEP) console.log(`data directory and server log kept: ${dataDir}`);
  else await rm(dataDir, { recursive: true, force: true });
}
