// The one-port listener with everything the transport does: Connect, gRPC and gRPC-Web through the
// connect router, W&B's routes, the tokenizer files of /hf (a Hugging Face Hub endpoint), the
// console's files, REST through the transcoder, each request behind the error boundary. What it
// serves (the services' handlers) is handed in by the composition root (services/app/server.ts).
import type { DescService } from "@bufbuild/protobuf";
import { Evaluations } from "../../gen/srl/v1/evaluations_pb.js";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { Messages } from "../../gen/srl/v1/messages_pb.js";
import { Responses } from "../../gen/srl/v1/responses_pb.js";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Config } from "../core/config.js";
import type { Logger } from "../core/logger.js";
import type { ServiceHandlers } from "../core/rpc/index.js";
import type { BlobStore } from "../store/index.js";
import type { WandbApi } from "../wandb/index.js";
import type { ApiKeys } from "./auth/api-keys.js";
import { Callers } from "./auth/callers.js";
import { EntityRateLimit } from "./auth/entity-rate-limit.js";
import { listen } from "./listener.js";
import { buildEndpoints, registerEndpoints } from "./pipeline.js";
import { registerReflection } from "./reflection.js";
import { createTranscoder } from "./transcoder.js";
import { serveConsole } from "./console-files.js";
import { wandbRoutes } from "./wandb-routes.js";
import { hfRoutes, type HfTokenizerRepos } from "./hf-routes.js";
import { answerFailure, guardRequests } from "./http-boundary.js";
import { metricsRoute } from "./metrics-route.js";

export interface GatewayOptions {
  handlers: ServiceHandlers[];
  keys: ApiKeys;
  wandb: WandbApi;
  /** The base models whose tokenizers `/hf` serves as a Hugging Face Hub repository each. */
  hfTokenizers: HfTokenizerRepos;
  /** Where REST uploads stream their files. */
  blobs: BlobStore;
  config: Config;
  log: Logger;
}

export interface Gateway {
  port: number;
  /** Refuses new connections and waits up to `graceMs` for in-flight requests; streams end then. */
  close(graceMs: number): Promise<void>;
}

/** Services that generate: their bodies are bounded by INFERENCE_BODY_LIMIT_BYTES. */
const generationServices = new Set<DescService>([Inference, Messages, Responses, Evaluations]);

export async function serveGateway({ handlers, keys, wandb, hfTokenizers, blobs, config, log }: GatewayOptions): Promise<Gateway> {
  const rate = () => new EntityRateLimit(config.entityRequestsPerSecond, config.entityRequestBurst);
  const callers = new Callers(keys, rate(), rate());
  const endpoints = buildEndpoints(handlers, callers);
  const shutdown = new AbortController();
  // Generation requests are bounded well below uploads: a huge prompt is refused while it is read,
  // before the gateway's one event loop parses it.
  const bodyLimitOfService = (service: DescService) => (generationServices.has(service) ? Math.min(config.inferenceBodyLimitBytes, config.bodyLimitBytes) : config.bodyLimitBytes);
  const transcoder = createTranscoder({
    endpoints,
    callers,
    bodyLimitOf: (method) => bodyLimitOfService(method.parent),
    stageUpload: (content, options) => blobs.write(content, options),
    log,
    shutdownSignal: shutdown.signal,
  });
  const wandbApi = wandbRoutes({ api: wandb, callers, bodyLimitBytes: config.bodyLimitBytes, log });
  const hfApi = hfRoutes({ repos: hfTokenizers, log });
  const metricsApi = metricsRoute({ access: { token: config.metricsToken, operatorEntity: config.bootstrapEntity }, callers, log });
  const handler = connectNodeAdapter({
    routes: (router) => {
      registerEndpoints(router, endpoints, bodyLimitOfService);
      registerReflection(router, [...new Set(handlers.map((h) => h.service))]);
    },
    readMaxBytes: config.bodyLimitBytes,
    shutdownSignal: shutdown.signal,
    interceptors: [rpcLog(log)],
    fallback: (req, res) =>
      void wandbApi(req, res)
        .then(async (served) => (served || (await metricsApi(req, res)) || (await hfApi(req, res)) || (await serveConsole(req, res)) ? undefined : transcoder(req, res)))
        .catch((error: unknown) => answerFailure(res, error, log)),
  });
  const listener = await listen(guardRequests(handler, log), config.host, config.port, {
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: Math.max(config.requestTimeoutMs, config.headersTimeoutMs),
    idleTimeoutMs: config.idleTimeoutMs,
    stallTimeoutMs: config.stallTimeoutMs,
  });
  return {
    port: listener.port,
    async close(graceMs) {
      const closing = listener.close(graceMs);
      // Streams (event watches, completions) end when the grace period is over.
      const timer = setTimeout(() => shutdown.abort(), graceMs);
      await closing;
      clearTimeout(timer);
      shutdown.abort();
    },
  };
}

/** One structured line per Connect, gRPC and gRPC-Web call (REST calls are logged by the transcoder). */
function rpcLog(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const contentType = req.header.get("content-type") ?? "";
    const protocol = contentType.startsWith("application/grpc-web") ? "grpc-web" : contentType.startsWith("application/grpc") ? "grpc" : "connect";
    const fields = { protocol, rpc: `${req.service.typeName}/${req.method.name}` };
    try {
      const res = await next(req);
      log.info("request", { ...fields, code: "ok", duration_ms: Math.round(performance.now() - started) });
      return res;
    } catch (error) {
      const code = ConnectError.from(error).code;
      log.info("request", { ...fields, code, duration_ms: Math.round(performance.now() - started) });
      throw error;
    }
  };
}
