// Runs one check process and turns how it ended into a verdict: a signal (SIGILL, SIGSEGV, ...)
// is named with the model it was running, a hang is killed, any other failure is quoted.
import { spawn } from "node:child_process";
import { describeSignal } from "../../../../core/child-process.js";
import type { CandidateCheck } from "../../llama-binaries.js";

export interface CheckProcess {
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  timeoutMs: number;
}

/** What the check process printed: one JSON object per line. */
export type CheckLine = { event: string; [key: string]: unknown };

export interface ProcessOutcome {
  lines: CheckLine[];
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stderrTail: string;
}

export function runCheckProcess(check: CheckProcess, onLine: (line: CheckLine) => void = () => {}): Promise<ProcessOutcome> {
  return new Promise((resolve) => {
    const child = spawn(check.command, check.args, { env: check.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    const lines: CheckLine[] = [];
    let pending = "";
    let stderr = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, check.timeoutMs);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf("\n")) >= 0) {
        const text = pending.slice(0, end).trim();
        pending = pending.slice(end + 1);
        if (!text.startsWith("{")) continue;
        try {
          const line = JSON.parse(text) as CheckLine;
          lines.push(line);
          onLine(line);
        } catch {
          // llama.cpp's own output on stdout: not ours.
        }
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    child.once("error", (error) => {
      stderr += `\n${error.message}`;
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ lines, code, signal, timedOut, stderrTail: stderr.trim().split("\n").slice(-8).join("\n") });
    });
  });
}

/** The model a check was running when it ended: the last one started and not finished. */
export function runningModel(lines: CheckLine[]): string | null {
  const started = lines.filter((line) => line.event === "start").map((line) => String(line.model));
  const finished = new Set(lines.filter((line) => line.event === "model").map((line) => String(line.model)));
  const last = started[started.length - 1];
  return last !== undefined && !finished.has(last) ? last : null;
}

/** The verdict on a candidate from its check process's outcome. */
export function verdict(candidate: string, path: string | null, outcome: ProcessOutcome): CandidateCheck {
  const models = outcome.lines.filter((line) => line.event === "model").map((line) => `${String(line.model)}: ${line.ok ? "ok" : "FAILED"}, ${String(line.detail)}`);
  const loaded = outcome.lines.find((line) => line.event === "loaded");
  // The addon says once when it loads; llama-server says with each model it ran.
  const withAmx = outcome.lines.filter((line) => typeof line.amx === "boolean");
  const amx = withAmx.length > 0 ? withAmx.some((line) => line.amx === true) : null;
  const base = { candidate, path, amx, models };
  const running = runningModel(outcome.lines);
  const during = running ? ` while running model ${running}` : loaded || models.length > 0 ? "" : " while loading llama.cpp";
  if (outcome.timedOut) return { ...base, ok: false, reason: `the check did not finish in time${during} and was killed` };
  if (outcome.signal) return { ...base, ok: false, reason: `the check died of ${describeSignal(outcome.signal)}${during}` };
  if (outcome.code !== 0) return { ...base, ok: false, reason: `the check exited with code ${outcome.code}${during}: ${outcome.stderrTail || "no output"}` };
  const failed = outcome.lines.filter((line) => line.event === "model" && line.ok !== true);
  if (failed.length > 0) return { ...base, ok: false, reason: failed.map((line) => `model ${String(line.model)}: ${String(line.detail)}`).join("; ") };
  if (models.length === 0) return { ...base, ok: false, reason: "the check ran no model" };
  return { ...base, ok: true, reason: null };
}
