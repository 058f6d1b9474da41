// GraphQL execution with graphql-js over the schema of what is served (schema.graphql): a request
// the schema does not cover (a field, argument or operation W&B has and this service does not)
// fails validation and is answered at once with GraphQL's own message naming it.
import { readFileSync } from "node:fs";
import { buildSchema, execute, GraphQLError, Kind, parse, validate, type DocumentNode, type FragmentDefinitionNode, type GraphQLSchema, type SelectionSetNode } from "graphql";
import { ApiError } from "../core/errors.js";
import type { ResolverDeps } from "./resolver-deps.js";
import { rootValue } from "./resolvers.js";

export interface GraphqlAnswer {
  status: number;
  body: unknown;
}

let schema: GraphQLSchema | null = null;

export function servedSchema(): GraphQLSchema {
  schema ??= buildSchema(readFileSync(new URL("./schema.graphql", import.meta.url), "utf8"));
  return schema;
}

/** Bounds on what one request may ask (the SDK's documents are far below them). */
const MAX_QUERY_CHARS = 100_000;
/** Nesting of selections: the SDK's deepest document nests 9; objects link back to each other. */
export const MAX_DEPTH = 16;

/** How deep an operation's selections nest, fragments expanded (a fragment cycle counts as too deep). */
export function selectionDepth(document: DocumentNode): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const memo = new Map<string, number>();
  const depthOf = (set: SelectionSetNode | undefined, visiting: Set<string>): number => {
    if (!set) return 0;
    let deepest = 0;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const name = selection.name.value;
        if (visiting.has(name)) return Infinity;
        let inner = memo.get(name);
        if (inner === undefined) {
          inner = depthOf(fragments.get(name)?.selectionSet, new Set([...visiting, name])) - 1;
          memo.set(name, inner);
        }
        deepest = Math.max(deepest, inner);
      } else deepest = Math.max(deepest, depthOf(selection.selectionSet, visiting) - (selection.kind === Kind.INLINE_FRAGMENT ? 1 : 0));
    }
    return deepest + 1;
  };
  let deepest = 0;
  for (const definition of document.definitions) if (definition.kind === Kind.OPERATION_DEFINITION) deepest = Math.max(deepest, depthOf(definition.selectionSet, new Set()));
  return deepest;
}

export async function executeGraphql(body: unknown, deps: ResolverDeps): Promise<GraphqlAnswer> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return refusal("the request body must be a JSON object with `query`");
  const request = body as Record<string, unknown>;
  if (typeof request.query !== "string") return refusal("`query` must be a string");
  if (request.query.length > MAX_QUERY_CHARS) return refusal(`\`query\` is limited to ${MAX_QUERY_CHARS} characters`);
  const variables = request.variables ?? null;
  if (variables !== null && (typeof variables !== "object" || Array.isArray(variables))) return refusal("`variables` must be an object");
  const operationName = typeof request.operationName === "string" ? request.operationName : null;
  let document: DocumentNode;
  try {
    document = parse(request.query, { maxTokens: 20_000 });
  } catch (error) {
    return { status: 400, body: { errors: [formatError(error)] } };
  }
  if (selectionDepth(document) > MAX_DEPTH) return refusal(`the query nests selections deeper than ${MAX_DEPTH} levels`);
  const errors = validate(servedSchema(), document);
  if (errors.length > 0) return { status: 400, body: { errors: errors.map((e) => ({ message: `${e.message} (not served by this service's W&B API)`, locations: e.locations })) } };
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
  }
  // No data at all is a request error (bad variables): 400, which the SDK does not retry.
  return { status: result.data ? 200 : 400, body: { data: result.data ?? null, ...(result.errors ? { errors: result.errors.map(formatError) } : {}) } };
}

function refusal(message: string): GraphqlAnswer {
  return { status: 400, body: { errors: [{ message }] } };
}

function formatError(error: unknown): { message: string; path?: readonly (string | number)[] } {
  if (error instanceof GraphQLError) return { message: error.message, ...(error.path ? { path: error.path } : {}) };
  return { message: error instanceof Error ? error.message : String(error) };
}
