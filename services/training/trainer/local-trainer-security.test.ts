// The local trainer as the worker starts it (real PyTorch process): it binds its own port and
// answers only calls carrying the installation's secret (DATA_DIR/trainer-secret, mode 0600, never
// on any process's command line); a job whose trainer hangs (the process is stopped with SIGSTOP)
// fails by the job deadline naming it, the hung trainer is restarted, and the next job trains.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../core/logger.js";
import { ensureBuiltInModel } from "../../weights/tiny-model.js";
import type { TrainingJobInput } from "./api.js";
import { DEFAULT_TRAINER_PYTHON, LocalTrainer } from "./engine/local-trainer.js";
import { TrainerClient, TrainerTimeoutError } from "./engine/trainer-client.js";
import { TrainerPool } from "./engine/trainer-pool.js";
import { TRAINER_TIMEOUT_DEFAULTS } from "./engine/trainer-settings.js";
import { runTrainingJob } from "./runner/run-training-job.js";

const JOB_DEADLINE_MS = 8_000;
let dir: string;
let basePath: string;
let local: LocalTrainer;
/** Deadlines as configured by default, and one with a short job deadline: both on the same trainer process. */
let pool: TrainerPool;
let impatient: TrainerPool;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "trainer-security-"));
  basePath = await ensureBuiltInModel("tiny-chat", dir);
  local = new LocalTrainer({ python: DEFAULT_TRAINER_PYTHON, dataDir: dir, threads: 1, log: createLogger({ level: "error" }) });
  pool = new TrainerPool([], local, { secret: "", ca: undefined, ...TRAINER_TIMEOUT_DEFAULTS });
  impatient = new TrainerPool([], local, { secret: "", ca: undefined, ...TRAINER_TIMEOUT_DEFAULTS, jobTimeoutMs: JOB_DEADLINE_MS });
}, 60_000);

afterAll(async () => {
  await pool?.stop();
  await rm(dir, { recursive: true, force: true });
});

const rows: JsonObject[] = [
  { messages: [{ role: "user", content: "Capital of France?" }, { role: "assistant", content: "Paris" }] },
  { messages: [{ role: "user", content: "Cat legs?" }, { role: "assistant", content: "Four" }] },
];

async function sft(on: TrainerPool, sftRows: JsonObject[], onStep: () => void = () => undefined) {
  const size = (await stat(basePath)).size;
  const input: TrainingJobInput = { jobId: "j", kind: "sft", baseModel: { name: "tiny-chat", ggufPath: basePath, ggufSize: size, source: "builtin:tiny-chat", trainWeights: "" }, previousAdapter: null, sftRows, sftConfig: { batch_size: 1 } };
  return runTrainingJob(on, input, { started: () => undefined, step: onStep }, new AbortController().signal);
}

/** Every process's command line on this machine (what `ps` shows any user). */
function allCommandLines(): string[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8");
      } catch {
        return "";
      }
    });
}

describe("the local trainer", () => {
  it("answers only calls with the installation's secret, which no command line shows", async () => {
    expect((await sft(pool, rows)).trained).toBe(true);
    const secretFile = join(dir, "trainer-secret");
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    const secret = readFileSync(secretFile, "utf8").trim();
    expect(secret.length).toBeGreaterThanOrEqual(32);
    const url = `http://127.0.0.1:${readFileSync(join(dir, "run", `trainer-${process.pid}.port`), "utf8").trim()}`;
    expect((await new TrainerClient(url, { secret }).describe()).threads).toBe(1);
    await expect(new TrainerClient(url, { secret: "" }).describe()).rejects.toThrow(/refused this service.s secret .*: missing trainer secret/);
    await expect(new TrainerClient(url, { secret: `${secret.slice(0, -1)}x` }).describe()).rejects.toThrow(/wrong trainer secret/);
    expect(allCommandLines().some((line) => line.includes(secret))).toBe(false);
    expect(allCommandLines().some((line) => line.includes("srl_trainer") && line.includes("127.0.0.1:0"))).toBe(true); // it binds the port itself
  }, 180_000);

  it("fails a job whose trainer hangs by the job deadline, restarts the trainer, and trains the next job", async () => {
    const generation = local.generation;
    let stoppedAt = 0;
    const hung = sft(impatient, Array.from({ length: 200 }, () => rows).flat(), () => {
      if (stoppedAt) return;
      stoppedAt = Date.now();
      process.kill(-local.pid!, "SIGSTOP"); // the guard and python: alive, silent
    });
    const error = await hung.catch((e: unknown) => e);
    expect(stoppedAt).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(TrainerTimeoutError);
    expect((error as Error).message).toMatch(/did not answer within 8 s \(TRAINER_JOB_TIMEOUT_MS\)/);
    expect(Date.now() - stoppedAt).toBeLessThan(JOB_DEADLINE_MS + 10_000); // the deadline, plus the restart's grace
    expect(local.isAlive(generation)).toBe(false); // the hung process is gone

    const next = await sft(pool, rows);
    expect(next.trained).toBe(true);
    expect(local.generation).toBe(generation + 1);
  }, 240_000);
});
