// Every RPC goes through one pipeline whatever the protocol: authenticate (unless the method is
// public), validate the request against the field rules, run the handler, map errors. Connect, gRPC
// and gRPC-Web reach it through the connect router; REST through the transcoder, which calls the
// same endpoints.
import { getOption, hasOption, type DescField, type DescMessage, type DescMethod, type DescService, type Message, type MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectRouter, HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { http } from "../../gen/google/api/annotations_pb.js";
import { toConnectError, unimplemented, validationError } from "../core/errors.js";
import type { Callers } from "./auth/callers.js";
import { countRequest } from "./request-metrics.js";
import { principalKey, restValidatedKey, type ServiceHandlers } from "../core/rpc/index.js";
import { restRule } from "./validation/rules.js";
import { validateMessage } from "./validation/validate-message.js";
import type { Loc } from "./validation/checks.js";

type Init = MessageInitShape<DescMessage>;
type UnaryFn = (request: Message, context: HandlerContext) => Promise<Init> | Init;
type StreamFn = (request: Message, context: HandlerContext) => AsyncIterable<Init>;

export interface Endpoint {
  service: DescService;
  method: DescMethod;
  unary?: UnaryFn;
  stream?: StreamFn;
}

/**
 * One implementation per service from handler sets that may each implement part of it (the
 * contract puts the artifact upload on Training and health on Models; their code lives with the
 * folders that own them). A method implemented twice is a wiring error.
 */
function mergeHandlers(handlers: ServiceHandlers[]): ServiceHandlers[] {
  const merged = new Map<DescService, Record<string, unknown>>();
  for (const { service, impl } of handlers) {
    const into = merged.get(service) ?? {};
    for (const [method, fn] of Object.entries(impl)) {
      if (method in into) throw new Error(`${service.typeName}.${method} is implemented by two handler sets`);
      into[method] = fn;
    }
    merged.set(service, into);
  }
  return [...merged].map(([service, impl]) => ({ service, impl }) as ServiceHandlers);
}

export function buildEndpoints(handlers: ServiceHandlers[], callers: Callers): Endpoint[] {
  const endpoints: Endpoint[] = [];
  for (const { service, impl } of mergeHandlers(handlers)) {
    const fns = impl as unknown as Record<string, UnaryFn | StreamFn | undefined>;
    for (const method of service.methods) {
      const prepare = preparer(method, callers);
      const fn = fns[method.localName];
      const name = `${service.typeName}/${method.name}`;
      if (method.methodKind === "unary") {
        const handler = (fn as UnaryFn | undefined) ?? (() => Promise.reject(unimplemented(name)));
        endpoints.push({
          service,
          method,
          unary: async (request, context) => {
            try {
              await prepare(request, context);
              const response = await handler(request, context);
              countRequest(name, context);
              return response;
            } catch (error) {
              throw countRequest(name, context, toConnectError(error));
            }
          },
        });
      } else if (method.methodKind === "server_streaming") {
        const handler = (fn as StreamFn | undefined) ?? (() => (async function* () { throw unimplemented(name); })());
        endpoints.push({
          service,
          method,
          stream: async function* (request, context) {
            try {
              await prepare(request, context);
              yield* handler(request, context);
              countRequest(name, context);
            } catch (error) {
              throw countRequest(name, context, toConnectError(error));
            }
          },
        });
      }
    }
  }
  return endpoints;
}

/** `readMaxBytesOf`: the largest request message of a service (Connect, gRPC and gRPC-Web). */
export function registerEndpoints(router: ConnectRouter, endpoints: Endpoint[], readMaxBytesOf?: (service: DescService) => number): void {
  const byService = new Map<DescService, Record<string, UnaryFn | StreamFn>>();
  for (const endpoint of endpoints) {
    const impl = byService.get(endpoint.service) ?? {};
    impl[endpoint.method.localName] = (endpoint.unary ?? endpoint.stream) as UnaryFn | StreamFn;
    byService.set(endpoint.service, impl);
  }
  for (const [service, impl] of byService) router.service(service, impl as unknown as Partial<ServiceImpl<DescService>>, readMaxBytesOf ? { readMaxBytes: readMaxBytesOf(service) } : {});
}

function preparer(method: DescMethod, callers: Callers) {
  const isPublic = restRule(method)?.public ?? false;
  const locOf = locator(method);
  return async (request: Message, context: HandlerContext) => {
    if (!isPublic && !context.values.get(principalKey)) {
      context.values.set(principalKey, await callers.authenticate({ authorization: context.requestHeader.get("authorization"), apiKey: context.requestHeader.get("x-api-key") }));
    }
    if (!context.values.get(restValidatedKey)) {
      const violations = validateMessage(method.input, request, locOf);
      if (violations.length > 0) throw validationError(violations);
    }
  };
}

/** Where a top-level field lives on the REST surface, so violations read the same on every protocol. */
function locator(method: DescMethod): (field: DescField) => Loc {
  const rule = hasOption(method, http) ? getOption(method, http) : undefined;
  const template = rule?.pattern.value;
  const pathParams = new Set(typeof template === "string" ? [...template.matchAll(/\{([a-z_0-9]+)\}/g)].map((m) => m[1]) : []);
  const inBody = (name: string) => rule === undefined || rule.body === "*" || rule.body === name;
  return (field) => [pathParams.has(field.name) ? "path" : inBody(field.name) ? "body" : "query", field.name];
}
