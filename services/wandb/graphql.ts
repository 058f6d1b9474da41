// GraphQL execution with graphql-js over the schema of what is served (schema.graphql): a request
// the schema does not cover (a field, argument or operation W&B has and this service does not)
// fails validation and is answered at once with GraphQL's own message naming it. What a request
// may cost is bounded before anything runs (query-limits.ts, cost-budget.ts): refusals are GraphQL
// errors (400, or 429 with Retry-After for an entity over its budget), never a failed service.
import { readFileSync } from "node:fs";
import { buildSchema, execute, GraphQLError, parse, validate, type DocumentNode, type GraphQLSchema } from "graphql";
import { ApiError } from "../core/errors.js";
import type { CostBudget } from "./cost-budget.js";
import { FieldTooLarge } from "./field-limits.js";
import { checkDocument, costOf, QueryRefused, type QueryLimits } from "./query-limits.js";
import type { ResolverDeps } from "./resolver-deps.js";
import { rootValue } from "./resolvers.js";

export interface GraphqlAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

let schema: GraphQLSchema | null = null;

export function servedSchema(): GraphQLSchema {
  schema ??= buildSchema(readFileSync(new URL("./schema.graphql", import.meta.url), "utf8"));
  return schema;
}

/** Bounds on the request text itself (the SDK's documents are far below them). */
const MAX_QUERY_CHARS = 100_000;
const MAX_QUERY_TOKENS = 20_000;

export interface GraphqlLimits {
  query: QueryLimits;
  /** Each entity's cost budget (query-limits.ts costs), shared by its keys in this process. */
  budget: CostBudget;
}

export async function executeGraphql(body: unknown, deps: ResolverDeps, limits: GraphqlLimits): Promise<GraphqlAnswer> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return refusal("the request body must be a JSON object with `query`");
  const request = body as Record<string, unknown>;
  if (typeof request.query !== "string") return refusal("`query` must be a string");
  if (request.query.length > MAX_QUERY_CHARS) return refusal(`\`query\` is limited to ${MAX_QUERY_CHARS} characters`);
  const variables = request.variables ?? null;
  if (variables !== null && (typeof variables !== "object" || Array.isArray(variables))) return refusal("`variables` must be an object");
  // wandb-core (0.28+) sends `"operationName": ""` for anonymous documents: as graphql-js's own
  // HTTP servers do, an empty name means none (the document's single operation runs).
  const operationName = typeof request.operationName === "string" && request.operationName !== "" ? request.operationName : null;
  let document: DocumentNode;
  try {
    document = parse(request.query, { maxTokens: MAX_QUERY_TOKENS });
    // Limits before validation (its overlap rule is quadratic in a selection's fields), cost after.
    checkDocument(document, limits.query);
  } catch (error) {
    return { status: 400, body: { errors: [formatError(error)] } };
  }
  const errors = validate(servedSchema(), document);
  if (errors.length > 0) return { status: 400, body: { errors: errors.map((e) => ({ message: `${e.message} (not served by this service's W&B API)`, locations: e.locations })) } };
  let cost: number;
  try {
    cost = costOf(servedSchema(), document, (variables ?? {}) as Record<string, unknown>, operationName, limits.query);
  } catch (error) {
    if (error instanceof QueryRefused || error instanceof GraphQLError) return { status: 400, body: { errors: [formatError(error)] } };
    throw error;
  }
  const spent = limits.budget.take(deps.entity, cost);
  if (!spent.ok) {
    const message = `entity ${deps.entity} has spent its GraphQL cost budget (this query costs ${cost}); retry after ${spent.retryAfterSeconds} s`;
    return { status: 429, headers: { "retry-after": String(spent.retryAfterSeconds) }, body: { errors: [{ message, extensions: { code: "RATE_LIMITED", cost } }] } };
  }
  const result = await execute({
    schema: servedSchema(),
    document,
    rootValue: rootValue(deps),
    variableValues: variables as Record<string, unknown> | null,
    operationName,
  });
  if (result.errors && result.errors.length > 0) {
    const internal = result.errors.find((e) => !(e.originalError instanceof ApiError) && e.originalError !== undefined && !(e.originalError instanceof GraphQLError));
    if (internal) throw internal.originalError;
    // A field over its size limit (field-limits.ts) is the request's fault: 413, with the message.
    if (result.errors.some((e) => e.originalError instanceof FieldTooLarge)) return { status: 413, body: { data: result.data ?? null, errors: result.errors.map(formatError) } };
  }
  // No data at all is a request error (bad variables): 400, which the SDK does not retry.
  return { status: result.data ? 200 : 400, body: { data: result.data ?? null, ...(result.errors ? { errors: result.errors.map(formatError) } : {}) } };
}

function refusal(message: string): GraphqlAnswer {
  return { status: 400, body: { errors: [{ message }] } };
}

function formatError(error: unknown): { message: string; path?: readonly (string | number)[]; extensions?: { code: string } } {
  if (error instanceof QueryRefused) return { message: error.message, extensions: { code: error.code } };
  if (error instanceof GraphQLError) return { message: error.message, ...(error.path ? { path: error.path } : {}) };
  return { message: error instanceof Error ? error.message : String(error) };
}
