// Picks the llama.cpp build to use: each candidate in order is built (where it is a build), checked
// on the check models in a child process, and the first that passes is adopted. Verdicts are cached
// per build and per version of the checks, so a warm install checks nothing again.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CheckModel } from "./check-models.js";
import { linkLocalBuild } from "./local-build-link.js";
import type { BinaryChoiceReport, CandidateCheck } from "../../llama-binaries.js";
import { runCheckProcess, verdict, type CheckLine } from "./run-check.js";

export interface Candidate {
  name: string;
  /** The build's directory (built if needed), null for node-llama-cpp's prebuilt binary; throws when it cannot be built. */
  prepare(): Promise<string | null>;
  /** Check a candidate that did not win too (the prebuilt binary: whether it is a safe fallback). */
  alwaysCheck?: boolean;
}

export interface CheckOptions {
  kind: "addon" | "server";
  models: CheckModel[];
  /** Where verdicts are cached (keyed by candidate path and checksVersion); undefined: no cache. */
  verdictCache?: { dir: string; checksVersion: string };
  timeoutMs: number;
  log(line: string): void;
}

const ADDON_CHECK = fileURLToPath(new URL("./addon-check.ts", import.meta.url));
const SERVER_CHECK = fileURLToPath(new URL("./server-check.ts", import.meta.url));

/** Checks one candidate build; `path` null: the prebuilt addon. */
export async function checkCandidate(name: string, path: string | null, options: CheckOptions): Promise<CandidateCheck> {
  const models = options.models.map((model) => `${model.name}=${model.path}`);
  const progress = (line: CheckLine) => {
    if (line.event === "model") options.log(`  ${name}: ${String(line.model)} ${line.ok ? "ok" : "FAILED"} (${String(line.detail)})`);
  };
  const node = (script: string, args: string[]) => ({
    command: process.execPath,
    args: ["--import", "tsx", script, ...args],
    // As in the engine: llama.cpp decodes on a libuv pool thread.
    env: { ...process.env, UV_THREADPOOL_SIZE: "1" },
    timeoutMs: options.timeoutMs,
  });
  if (options.kind === "server") {
    if (path === null) throw new Error("a llama-server candidate needs a path");
    return verdict(name, path, await runCheckProcess(node(SERVER_CHECK, [join(path, "llama-server"), ...models]), progress));
  }
  // A name of its own, so processes loading the default local build meanwhile are not affected.
  const linkName = `check-${name}-${process.pid}`;
  const unlink = path === null ? () => {} : linkLocalBuild(path, linkName);
  try {
    const outcome = await runCheckProcess(node(ADDON_CHECK, [path === null ? "prebuilt" : "auto", path === null ? "-" : linkName, ...models]), progress);
    const result = verdict(name, path, outcome);
    const loaded = outcome.lines.find((line) => line.event === "loaded");
    const expected = path === null ? "prebuilt" : "localBuild";
    if (result.ok && loaded?.build !== expected) {
      return { ...result, ok: false, reason: `node-llama-cpp loaded its ${String(loaded?.build)} binary instead of this one` };
    }
    return result;
  } finally {
    unlink();
  }
}

/** Tries the candidates in order; the first that passes is adopted (and linked by the caller). */
export async function chooseCandidate(candidates: Candidate[], options: CheckOptions): Promise<BinaryChoiceReport> {
  const checks: CandidateCheck[] = [];
  let adopted: CandidateCheck | null = null;
  for (const candidate of candidates) {
    if (adopted && !candidate.alwaysCheck) continue;
    let path: string | null;
    try {
      path = await candidate.prepare();
    } catch (error) {
      const reason = `it could not be built: ${error instanceof Error ? error.message : String(error)}`;
      options.log(`${candidate.name}: ${reason}`);
      checks.push({ candidate: candidate.name, path: null, ok: false, reason, amx: null, models: [] });
      continue;
    }
    const cached = readCachedVerdict(candidate.name, path, options);
    if (cached) options.log(`${candidate.name}: ${cached.ok ? "passed" : "failed"} its check before (${path ?? "prebuilt"}); not checked again`);
    else options.log(`${candidate.name}: checking ${path ?? "node-llama-cpp's prebuilt binary"} on ${options.models.length} models (batched prefill and decode)`);
    const check = cached ?? (await checkCandidate(candidate.name, path, options));
    if (!cached) writeCachedVerdict(check, options);
    if (!check.ok) options.log(`${candidate.name}: REFUSED: ${check.reason}`);
    else if (!cached) options.log(`${candidate.name}: passed${check.amx ? " (with AMX)" : ""}`);
    checks.push(check);
    if (check.ok && !adopted) adopted = check;
  }
  return { adopted: adopted?.candidate ?? null, path: adopted?.path ?? null, checks };
}

function verdictFile(name: string, path: string | null, options: CheckOptions): string | null {
  if (!options.verdictCache) return null;
  const key = `${options.kind}-${name}-${Buffer.from(path ?? "prebuilt").toString("base64url")}-${options.verdictCache.checksVersion}`;
  return join(options.verdictCache.dir, `${key}.json`);
}

function readCachedVerdict(name: string, path: string | null, options: CheckOptions): CandidateCheck | null {
  const file = verdictFile(name, path, options);
  if (!file || !existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as CandidateCheck;
  } catch {
    return null;
  }
}

function writeCachedVerdict(check: CandidateCheck, options: CheckOptions): void {
  const file = verdictFile(check.candidate, check.path, options);
  if (!file) return;
  mkdirSync(options.verdictCache!.dir, { recursive: true });
  writeFileSync(file, JSON.stringify(check, null, 2));
}
