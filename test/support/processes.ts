// Processes a test needs to signal (the embedded database under a running server), found the way
// `ps` finds them: by their command line in /proc.
import { readdirSync, readFileSync } from "node:fs";

/** The pid of the process whose program ends with `program` and whose arguments mention `fragment`. */
export function findProcess(program: string, fragment: string): number {
  const found = listProcesses(program, fragment)[0];
  if (!found) throw new Error(`no ${program} process with "${fragment}" in its arguments`);
  return found.pid;
}

/** Every process whose program ends with `program` and whose arguments mention `fragment`, with its arguments. */
export function listProcesses(program: string, fragment: string): { pid: number; args: string[] }[] {
  const found: { pid: number; args: string[] }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    if (argv[0]?.endsWith(program) && argv.slice(1).some((arg) => arg.includes(fragment))) found.push({ pid: Number(entry), args: argv.slice(1) });
  }
  return found;
}

/** Whether `pid` is alive (and not a zombie). */
export function isRunning(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}
