// What the install found of the llama.cpp binaries (llama/build-check/cli.ts writes it at install, the engine
// reads it at start-up): which build each check tried, why one was refused, which one is in use.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const BINARIES_REPORT_PATH = join(REPO_ROOT, ".cache/llama-binaries.json");
/** The checked llama-server's directory, linked by the install. */
export const LLAMA_SERVER_DIR = join(REPO_ROOT, ".cache/llama-server");

/** One candidate build checked on real models. */
export interface CandidateCheck {
  /** "native" (-march=native), "noamx" (the same without AMX) or "prebuilt" (node-llama-cpp's own). */
  candidate: string;
  /** The build's directory, or null for the prebuilt binary or a build that failed to compile. */
  path: string | null;
  ok: boolean;
  /** Why it was refused: a signal and the model it was running, a wrong result, a failed build. */
  reason: string | null;
  /** Whether llama.cpp reported AMX in use (null: unknown, the check died first). */
  amx: boolean | null;
  /** One line per model checked. */
  models: string[];
}

export interface BinaryChoiceReport {
  /** The candidate in use, or null when none passed. */
  adopted: string | null;
  path: string | null;
  checks: CandidateCheck[];
}

export interface BinariesReport {
  addon: BinaryChoiceReport | null;
  server: BinaryChoiceReport | null;
}

/** The report, or an empty one where the install has not written it. */
export function readBinariesReport(path = BINARIES_REPORT_PATH): BinariesReport {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<BinariesReport>;
    return { addon: parsed.addon ?? null, server: parsed.server ?? null };
  } catch {
    return { addon: null, server: null };
  }
}

/** Whether the prebuilt binary passed its check while a local build is in use: the engine's fallback. */
export function prebuiltIsSafeFallback(report: BinariesReport): boolean {
  const addon = report.addon;
  if (!addon || addon.adopted === null || addon.adopted === "prebuilt") return false;
  return addon.checks.some((check) => check.candidate === "prebuilt" && check.ok);
}

/** The llama-server binary the install built and checked; throws saying why where there is none. */
export function installedLlamaServer(): string {
  const binary = join(LLAMA_SERVER_DIR, "llama-server");
  if (existsSync(binary)) return binary;
  const refused = (readBinariesReport().server?.checks ?? []).map((check) => `${check.candidate}: ${check.reason}`);
  throw new Error(`no checked llama-server at ${binary}: ${refused.length > 0 ? `every build was refused (${refused.join("; ")})` : "run bash scripts/install.sh, which builds and checks it"}`);
}
