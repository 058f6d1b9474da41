// Entry of the engine child process (forked by engine/client.ts with an IPC channel). Runs with
// UV_THREADPOOL_SIZE=1: llama.cpp decodes on libuv pool threads and each brings its own OpenMP
// team, so a larger pool oversubscribes the cores (measured 3.5x slower generation).
import type { EngineSettings, EngineToGateway, GatewayToEngine } from "../protocol.js";
import { createLogger } from "../../../core/logger.js";
import { LlamaEngine } from "./engine.js";
import { EngineRequestError } from "./errors.js";

// settings.threads 0: chosen per model (threads.ts).
const settings = JSON.parse(process.env.SRL_ENGINE_SETTINGS ?? "{}") as EngineSettings;
const engine = new LlamaEngine(settings, createLogger({ level: settings.logLevel, fields: { component: "engine", pid: process.pid } }));
const running = new Map<string, AbortController>();

// Messages leave in one batch per event-loop turn: the tokens of every sequence of a decode step
// travel in one IPC write, sent while the next step decodes.
let outbox: EngineToGateway[] = [];
const flush = () => {
  const batch = outbox;
  outbox = [];
  process.send?.(batch);
};
const send = (message: EngineToGateway) => {
  if (outbox.push(message) === 1) setImmediate(flush);
};

process.on("message", (message: GatewayToEngine) => {
  if (message.type === "cancel") {
    running.get(message.id)?.abort();
    return;
  }
  if (message.type === "usage") {
    send({ type: "usage", id: message.id, pools: engine.usage() });
    return;
  }
  if (message.type === "describe") {
    const { id, base } = message;
    engine.describe(base).then(
      (maxModelLen) => send({ type: "described", id, maxModelLen, error: null }),
      (error: unknown) => send({ type: "described", id, maxModelLen: null, error: `${base.name}: ${error instanceof Error ? error.message : String(error)}` }),
    );
    return;
  }
  if (message.type === "render") {
    const { request, contextSize } = message;
    engine.render(request, contextSize).then(
      (prompt) => send({ type: "rendered", id: request.id, prompt }),
      (error: unknown) => send(failed(request.id, error)),
    );
    return;
  }
  if (message.type === "tokenizer") {
    const { id, base, op } = message;
    engine.tokenizer(base, op).then(
      (answer) => send({ type: "tokenizerAnswer", id, answer }),
      (error: unknown) => send(failed(id, error)),
    );
    return;
  }
  const { request } = message;
  const abort = new AbortController();
  running.set(request.id, abort);
  engine
    .generate(request, abort.signal, send)
    .catch((error: unknown) => send(failed(request.id, error)))
    .finally(() => running.delete(request.id));
});

/** The answer to request `id` that failed: its kind (a request's own error, else internal) and why. */
function failed(id: string, error: unknown): EngineToGateway {
  return { type: "failed", id, kind: error instanceof EngineRequestError ? error.kind : "internal", message: error instanceof Error ? error.message : String(error) };
}

// The gateway went away: nothing left to serve.
process.on("disconnect", () => process.exit(0));
send({ type: "ready" });
