// Routes for the REST surface, read from the google.api.http options of the services' methods.
import { getOption, hasOption, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import { badRequest } from "../../core/errors.js";
import { clipText } from "../../core/clip.js";
import { decodeSegment } from "./request-target.js";

export interface RestRoute {
  service: DescService;
  method: DescMethod;
  verb: string;
  template: string;
  /** "" (no body), "*" (every field not bound by the path) or a field name. */
  body: string;
  responseBody: string;
  pathParams: string[];
  matcher: RegExp;
}

export function restRoutes(services: DescService[]): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const rule = getOption(method, http);
      for (const binding of [rule, ...rule.additionalBindings]) routes.push(compile(service, method, binding, rule));
    }
  }
  return routes;
}

function compile(service: DescService, method: DescMethod, binding: HttpRule, primary: HttpRule): RestRoute {
  const { case: verb, value: template } = binding.pattern;
  if (verb === undefined || verb === "custom") throw new Error(`${method.name}: unsupported http rule`);
  const pathParams: string[] = [];
  const pattern = template
    .split("/")
    .map((segment) => {
      // `{name}` is one segment; `{name=**}` the rest of the path, slashes included (model names).
      const variable = /^\{([a-z_][a-z0-9_]*)(=\*\*)?\}$/.exec(segment);
      if (!variable?.[1]) return escapeRegExp(segment);
      pathParams.push(variable[1]);
      return variable[2] ? "(.+)" : "([^/]+)";
    })
    .join("/");
  return {
    service,
    method,
    verb: verb.toUpperCase(),
    template,
    body: binding.body,
    responseBody: binding.responseBody || primary.responseBody,
    pathParams,
    matcher: new RegExp(`^${pattern}$`),
  };
}

/**
 * Routes matching a path, with their path parameters; several when methods share a rule (streaming
 * twins). A parameter with a malformed percent-encoding is a 400.
 */
export function matchRoutes(routes: RestRoute[], verb: string, path: string): { route: RestRoute; params: Record<string, string> }[] {
  const found: { route: RestRoute; params: Record<string, string> }[] = [];
  for (const route of routes) {
    if (route.verb !== verb) continue;
    const match = route.matcher.exec(path);
    if (!match) continue;
    const params: Record<string, string> = {};
    route.pathParams.forEach((name, index) => {
      const raw = match[index + 1] ?? "";
      const decoded = decodeSegment(raw);
      if (decoded === null) throw badRequest(`the path parameter ${name} has a malformed percent-encoding: ${clipText(raw, 64)}`);
      params[name] = decoded;
    });
    found.push({ route, params });
  }
  return found;
}

/** Verbs that exist for a path, for 405 answers. */
export function allowedVerbs(routes: RestRoute[], path: string): string[] {
  return [...new Set(routes.filter((r) => r.matcher.test(path)).map((r) => r.verb))];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
