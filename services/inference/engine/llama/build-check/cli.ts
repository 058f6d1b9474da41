// `node --import tsx services/inference/engine/llama/build-check/cli.ts addon|server`, run by
// scripts/install.sh: builds the llama.cpp candidates (scripts/build-llama-addon.sh,
// scripts/build-llama-server.sh), checks each on real quantized models in a child process, links
// the first that passes (node-llama-cpp's local build; .cache/llama-server) and writes what it
// found to .cache/llama-binaries.json, which the engine logs at start-up. Candidates in order:
// native (-march=native, AMX included where the CPU has it), noamx (where the CPU has AMX), and
// for the addon node-llama-cpp's prebuilt binary, which is checked in any case: where it passes,
// it is the engine's fallback should the adopted build crash at run time. LLAMA_VARIANT=native or
// noamx tries only that build (and then the prebuilt binary).
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { cpus, homedir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureCheckModels, type CheckModel } from "./check-models.js";
import { chooseCandidate, type Candidate } from "./check-candidates.js";
import { localBuildFolder, replaceWithLink } from "./local-build-link.js";
import { BINARIES_REPORT_PATH, LLAMA_SERVER_DIR, readBinariesReport, type BinaryChoiceReport } from "../../llama-binaries.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../..");
const CACHE = process.env.SRL_CACHE_DIR || join(homedir(), ".cache", "srl");
const SMOLLM2 = join(REPO_ROOT, ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf");
/** A check of 8 small models takes seconds; minutes only for a build whose threads spin on a busy machine. */
const CHECK_TIMEOUT_MS = 600_000;

const log = (line: string) => process.stderr.write(`install-llama: ${line}\n`);

function hasAmx(): boolean {
  try {
    return /\bamx_tile\b/.test(readFileSync("/proc/cpuinfo", "utf8"));
  } catch {
    return false;
  }
}

/** A hash of everything that decides what a check does: its code, the model writer's, the binary loader's. */
function checksVersion(): string {
  const hash = createHash("sha256");
  const add = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
      if (!entry.isFile() || !entry.name.endsWith(".ts") || entry.name.endsWith(".test.ts")) continue;
      const file = join(entry.parentPath, entry.name);
      hash.update(relative(REPO_ROOT, file)).update(readFileSync(file));
    }
  };
  add(join(REPO_ROOT, "services/weights"));
  add(dirname(fileURLToPath(import.meta.url)));
  hash.update(readFileSync(join(REPO_ROOT, "services/inference/engine/llama/binary.ts")));
  return hash.digest("hex").slice(0, 16);
}

/** Runs a build script; its progress goes to stderr, its last stdout line is the build's directory. */
function build(script: string, variant: string): Promise<string> {
  return new Promise((resolvePath, reject) => {
    const child = execFile("bash", [join(REPO_ROOT, "scripts", script), "--variant", variant], { cwd: REPO_ROOT, maxBuffer: 1 << 24 }, (error, stdout) => {
      if (error) return reject(new Error(`scripts/${script} --variant ${variant} failed (its output is above)`));
      const lines = stdout.trim().split("\n");
      resolvePath(lines[lines.length - 1] ?? "");
    });
    child.stderr?.pipe(process.stderr);
  });
}

function variants(script: string): Candidate[] {
  const candidate = (name: string): Candidate => ({ name, prepare: () => build(script, name) });
  // LLAMA_VARIANT=native|noamx: only that build (to compare AMX on and off, say).
  const only = process.env.LLAMA_VARIANT;
  if (only === "native" || only === "noamx") return [candidate(only)];
  if (only) throw new Error(`LLAMA_VARIANT=${only} is not native or noamx`);
  // A build without AMX only where the native one has it: elsewhere the two are the same.
  return hasAmx() ? [candidate("native"), candidate("noamx")] : [candidate("native")];
}

function writeReport(section: "addon" | "server", choice: BinaryChoiceReport): void {
  const report = { ...readBinariesReport(), [section]: choice };
  const temporary = `${BINARIES_REPORT_PATH}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(report, null, 2) + "\n");
  renameSync(temporary, BINARIES_REPORT_PATH);
}

async function main(kind: string | undefined): Promise<number> {
  if (kind !== "addon" && kind !== "server") {
    process.stderr.write("usage: cli.ts addon|server\n");
    return 2;
  }
  const started = Date.now();
  const version = checksVersion();
  const models: CheckModel[] = await ensureCheckModels(join(CACHE, `llama-check-models-${version}`), [{ name: "SmolLM2-135M-Q4_1", path: SMOLLM2 }]);
  const options = { kind, models, verdictCache: { dir: join(CACHE, "llama-check-verdicts"), checksVersion: `${version}-${cpus().length}` }, timeoutMs: CHECK_TIMEOUT_MS, log } as const;
  const candidates: Candidate[] =
    kind === "addon"
      ? [...variants("build-llama-addon.sh"), { name: "prebuilt", prepare: async () => null, alwaysCheck: true }]
      : variants("build-llama-server.sh");
  const choice = await chooseCandidate(candidates, options);
  const link = kind === "addon" ? localBuildFolder() : LLAMA_SERVER_DIR;
  if (choice.path !== null) replaceWithLink(choice.path, link);
  else rmSync(link, { recursive: true, force: true });
  writeReport(kind, choice);
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  const what = kind === "addon" ? "node-llama-cpp's binary" : "llama-server";
  if (choice.adopted === null) {
    log(`WARNING: no ${what} passed its check (${seconds} s); see ${relative(REPO_ROOT, BINARIES_REPORT_PATH)}`);
    return 1;
  }
  const refused = choice.checks.filter((check) => !check.ok && check.candidate !== "prebuilt");
  const amx = choice.checks.find((check) => check.candidate === choice.adopted)?.amx;
  log(`${what}: ${choice.adopted} build in use${amx ? " (AMX)" : ""}: ${choice.path ?? "node-llama-cpp's prebuilt binary"} (${seconds} s)`);
  for (const check of refused) log(`  refused ${check.candidate}: ${check.reason}`);
  return 0;
}

process.exitCode = await main(process.argv[2]);
