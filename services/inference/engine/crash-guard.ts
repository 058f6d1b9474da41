// Native crashes of the engine process, by base model. llama.cpp dying of SIGILL, SIGSEGV, SIGBUS
// or SIGFPE on a model usually dies the same way on every retry (an instruction this CPU cannot
// run, a kernel that faults on this model's tensors): restarting the engine into it forever would
// answer every request for that model 503 after a slow restart, and take the other models' requests
// in flight down each time. So a model whose requests were in flight at two such deaths in a row
// (no request of it finished between them) is not run again: the engine moves to node-llama-cpp's
// prebuilt binary where the install checked that one, else the model's requests are refused at
// once with the cause and what to do. Each decision is logged once, with the signal.
import { describeSignal } from "../../core/child-process.js";
import { ApiError } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import type { BinaryChoice } from "./protocol.js";
import { prebuiltIsSafeFallback, readBinariesReport, type BinariesReport } from "./llama-binaries.js";

/** Deaths that come from the native code itself (an abort, an OOM kill or a stop are not counted). */
export const NATIVE_CRASH_SIGNALS: ReadonlySet<string> = new Set(["SIGILL", "SIGSEGV", "SIGBUS", "SIGFPE"]);
export const CRASHES_IN_A_ROW = 2;

export class CrashGuard {
  /** The binary the next engine process loads. */
  binary: BinaryChoice;
  private fallbackLeft: boolean;
  private readonly inARow = new Map<string, number>();
  private readonly refused = new Map<string, ApiError>();

  constructor(
    choice: BinaryChoice,
    private readonly log: Logger,
    private readonly report: BinariesReport = readBinariesReport(),
  ) {
    this.binary = choice;
    this.fallbackLeft = choice === "auto" && prebuiltIsSafeFallback(report);
  }

  /** The error for a model that keeps crashing the engine, or undefined when it may run. */
  refusal(base: string): ApiError | undefined {
    return this.refused.get(base);
  }

  /** Models refused so far (/metrics). */
  refusedCount(): number {
    return this.refused.size;
  }

  /** A request on the model finished: its crashes are no longer in a row. */
  succeeded(base: string): void {
    this.inARow.delete(base);
  }

  /**
   * The engine died with `signal` while these base models had work in it. Returns, by model, the
   * error its requests in flight get: what happened and what to do (send it again, or it is now
   * refused). Empty for a death that is not a native crash (a kill, an abort).
   */
  crashed(signal: NodeJS.Signals | null, working: string[]): Map<string, ApiError> {
    const errorOf = new Map<string, ApiError>();
    if (signal === null || !NATIVE_CRASH_SIGNALS.has(signal)) return errorOf;
    const repeated: string[] = [];
    for (const base of new Set(working)) {
      const count = (this.inARow.get(base) ?? 0) + 1;
      this.inARow.set(base, count);
      if (count >= CRASHES_IN_A_ROW) repeated.push(base);
      // Said before it happens: one more crash of this model refuses it.
      else errorOf.set(base, new ApiError("unavailable", `the inference engine crashed (${describeSignal(signal)}) while running base model ${base}; it restarts with the next request. Sending this request again is safe, but if ${base} crashes the engine a second time in a row it is refused until the server restarts.`));
    }
    if (repeated.length === 0) return errorOf;
    if (this.fallbackLeft) {
      this.fallbackLeft = false;
      this.binary = "prebuilt";
      this.inARow.clear();
      this.log.error("the engine's llama.cpp build crashed twice in a row on a model; the engine moves to node-llama-cpp's prebuilt binary, which passed its check at install (slower on several threads)", {
        models: repeated,
        signal: describeSignal(signal),
        build: this.report.addon?.path ?? null,
      });
      for (const base of repeated) errorOf.set(base, new ApiError("unavailable", `the inference engine crashed twice in a row (${describeSignal(signal)}) while running base model ${base}; it now runs on node-llama-cpp's prebuilt llama.cpp binary instead of the local build. Send the request again.`));
      return errorOf;
    }
    for (const base of repeated) {
      // 503 with the cause: a 500's message is hidden from clients, and this one says what to do.
      const error = new ApiError("unavailable", this.message(base, signal));
      this.refused.set(base, error);
      this.inARow.delete(base);
      errorOf.set(base, error);
      this.log.error("model refused: it crashed the inference engine twice in a row", { model: base, signal: describeSignal(signal), binary: this.binaryLabel() });
    }
    return errorOf;
  }

  private binaryLabel(): string {
    const addon = this.report.addon;
    if (this.binary === "prebuilt" || !addon || addon.adopted === "prebuilt" || addon.path === null) return "node-llama-cpp's prebuilt llama.cpp binary";
    return `the ${addon.adopted} llama.cpp build ${addon.path}`;
  }

  private message(base: string, signal: NodeJS.Signals): string {
    const remedy =
      this.binary === "prebuilt"
        ? "check that the model file is a valid GGUF this llama.cpp supports"
        : "rebuild and re-check llama.cpp with `bash scripts/install.sh` (a build this CPU cannot run is replaced), or set ENGINE_BINARY=prebuilt";
    // Read by people in the console and by clients that would retry a 503: it says retrying will not help.
    return `base model ${base} crashed the inference engine twice in a row (${describeSignal(signal)}) on ${this.binaryLabel()}, so it is refused until the server restarts: sending the request again will not help. Other models are served meanwhile. For the server's operator: ${remedy}, then restart the server.`;
  }
}
