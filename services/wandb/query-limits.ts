// What one GraphQL request may ask before any resolver runs. Two passes, both cheap:
// - over the document as written, before validation (whose overlap rule is quadratic in the
//   fields of a selection): aliases, field selections, nesting depth and introspection;
// - over the validated operation with its variables, fragments expanded: a cost per field, with
//   database lookups weighing more, list pages multiplying what they select, and history reads
//   adding one per row they may return (costOf).
import {
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  getVariableValues,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  visit,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLError,
  type GraphQLField,
  type GraphQLSchema,
  type SelectionNode,
  type SelectionSetNode,
} from "graphql";
import { samplesOf } from "./history-sampling.js";

export type IntrospectionMode = "off" | "types" | "full";

export interface QueryLimits {
  /** Aliased fields in one document (the wandb SDK's documents use at most 3). */
  maxAliases: number;
  /** Field selections in the document as written (the SDK's largest has under 100). */
  maxFields: number;
  /** Nesting of selections, fragments expanded. */
  maxDepth: number;
  /** Cost of one operation (costOf below). */
  maxCost: number;
  /** "types": `__type(name:)` lookups, as the SDK sends to probe the server; "full": `__schema` too. */
  introspection: IntrospectionMode;
}

export const DEFAULT_QUERY_LIMITS: QueryLimits = { maxAliases: 30, maxFields: 500, maxDepth: 16, maxCost: 25_000, introspection: "types" };

/** Field selections the cost walk visits at most (fragments expanded), whatever the cost. */
const MAX_EXPANDED_NODES = 20_000;
/** Weight of a field whose resolver reads or writes the database; other fields weigh 1. */
export const DATABASE_FIELD_WEIGHT = 10;
/** Fields resolved with a database round trip (each Mutation field is one too). */
export const DATABASE_FIELDS: ReadonlySet<string> = new Set([
  "Query.artifact",
  "Project.bucket",
  "Project.run",
  "Project.artifact",
  "Project.artifactCollection",
  "Project.artifactCollectionMembership",
  "ArtifactType.artifact",
  "ArtifactType.artifactCollection",
  "ArtifactCollection.artifacts",
  "ArtifactCollection.artifactMembership",
  "ArtifactSequence.latestArtifact",
  "ArtifactSequence.artifacts",
  "ArtifactSequence.artifactMembership",
  "ArtifactPortfolio.artifacts",
  "ArtifactPortfolio.artifactMembership",
  "Artifact.createdBy",
  "Artifact.usedBy",
  "Project.runs",
  "Project.runCount",
  "Run.history",
  "Run.sampledHistory",
  "Run.parquetHistory",
]);
/**
 * Fields returning history rows, and how many they may return (each row costs 1, like a field):
 * `samples` of a history page, the sum of the specs' `samples` of a sampled one.
 */
export const ROW_FIELDS: Readonly<Record<string, (args: Record<string, unknown>) => number>> = {
  "Run.history": (args) => samplesOf(args.samples),
  "Run.sampledHistory": (args) => (Array.isArray(args.specs) ? args.specs.reduce((sum: number, spec: unknown) => sum + samplesOf(specSamples(spec)), 0) : 0),
};
/** Lists without pages whose length is bounded (their resolvers return at most this many). */
export const BOUNDED_LISTS: Readonly<Record<string, number>> = { "Artifact.usedBy": 100 };
/** Mutations that do one database round trip per item of an input list. */
const PER_ITEM_MUTATIONS: Readonly<Record<string, string>> = { createArtifactFiles: "artifactFiles" };
/** A list page holds `first` items, at most this many; without `first`, this many (artifact-objects.ts). */
export const MAX_PAGE = 1000;

export class QueryRefused extends Error {
  constructor(
    message: string,
    /** Machine-readable reason, in the error's `extensions.code`. */
    readonly code: string,
  ) {
    super(message);
  }
}

/** The first pass: throws QueryRefused when the document as written is over a limit. */
export function checkDocument(document: DocumentNode, limits: QueryLimits): void {
  let aliases = 0;
  let fields = 0;
  let introspection: string | null = null;
  visit(document, {
    Field(node) {
      fields++;
      if (node.alias) aliases++;
      const name = node.name.value;
      if ((name === "__schema" && limits.introspection !== "full") || (name === "__type" && limits.introspection === "off")) introspection ??= name;
    },
  });
  if (aliases > limits.maxAliases) throw new QueryRefused(`the query has ${aliases} aliases; at most ${limits.maxAliases} are allowed`, "ALIAS_LIMIT");
  if (fields > limits.maxFields) throw new QueryRefused(`the query selects ${fields} fields; at most ${limits.maxFields} are allowed`, "FIELD_LIMIT");
  if (selectionDepth(document) > limits.maxDepth) throw new QueryRefused(`the query nests selections deeper than ${limits.maxDepth} levels`, "DEPTH_LIMIT");
  if (introspection !== null) {
    const allowed = limits.introspection === "off" ? "introspection is off on this server" : "only `__type` lookups are served (WANDB_GRAPHQL_INTROSPECTION=full serves `__schema`)";
    throw new QueryRefused(`\`${introspection}\` is not served: ${allowed}`, "INTROSPECTION_DISABLED");
  }
}

/**
 * The second pass (on a validated document): the cost of the operation that runs. A field costs
 * its weight plus its selections' cost, times its page size when it is a list page (`first`, or
 * the largest page when absent); fragments count where they are spread, `@skip`/`@include` as the
 * variables decide. Throws QueryRefused over `maxCost`, and GraphQLError for variables that do
 * not fit the operation.
 *
 * Written over graphql-js itself rather than with graphql-query-complexity: that package's `main`
 * is CommonJS with its ES module build only under `module` (no `exports` map), so an ESM-aware
 * loader (vitest's) gives it another graphql instance than the service's; graphql-js then refuses
 * the schema ("from another module or realm"), or with NODE_ENV=production its type checks fail
 * silently and every cost comes out 0.
 */
export function costOf(schema: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown>, operationName: string | null, limits: QueryLimits): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  let nodes = 0;
  const mutationType = schema.getMutationType();

  const selectionsCost = (set: SelectionSetNode, parent: GraphQLCompositeType, values: Record<string, unknown>, active: Set<string>): number => {
    let total = 0;
    for (const selection of set.selections) {
      if (!included(selection, values)) continue;
      if (++nodes > MAX_EXPANDED_NODES) throw new QueryRefused(`the query expands (fragments included) to more than ${MAX_EXPANDED_NODES} field selections`, "FIELD_LIMIT");
      if (selection.kind === Kind.FIELD) {
        const field = fieldOf(schema, parent, selection.name.value);
        if (!field) continue; // __typename (free), or a field validation has refused already
        const args = getArgumentValues(field, selection, values);
        const named = getNamedType(field.type);
        const child = selection.selectionSet && isCompositeType(named) ? selectionsCost(selection.selectionSet, named, values, active) : 0;
        const isMutation = parent === mutationType;
        let weight = isMutation || DATABASE_FIELDS.has(`${parent.name}.${field.name}`) ? DATABASE_FIELD_WEIGHT : 1;
        const listArg = isMutation ? PER_ITEM_MUTATIONS[field.name] : undefined;
        if (listArg !== undefined) weight *= Math.max(1, listLength((args.input as Record<string, unknown> | undefined)?.[listArg]));
        const paged = field.args.some((arg) => arg.name === "first");
        const rows = ROW_FIELDS[`${parent.name}.${field.name}`]?.(args) ?? 0;
        total += weight + rows + (paged ? pageSize(args.first) : (BOUNDED_LISTS[`${parent.name}.${field.name}`] ?? 1)) * child;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
        if (type && isCompositeType(type)) total += selectionsCost(selection.selectionSet, type, values, active);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        const type = fragment ? schema.getType(fragment.typeCondition.name.value) : undefined;
        if (!fragment || active.has(name) || !type || !isCompositeType(type)) continue;
        total += selectionsCost(fragment.selectionSet, type, values, new Set([...active, name]));
      }
    }
    return total;
  };

  let cost = 0;
  for (const operation of document.definitions) {
    if (operation.kind !== Kind.OPERATION_DEFINITION) continue;
    if (operationName !== null && operation.name?.value !== operationName) continue;
    const root = operation.operation === "mutation" ? mutationType : operation.operation === "query" ? schema.getQueryType() : null;
    if (!root) continue;
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
    if (coerced.errors) throw coerced.errors[0] as GraphQLError;
    cost += selectionsCost(operation.selectionSet, root, coerced.coerced, new Set());
  }
  if (cost > limits.maxCost) throw new QueryRefused(`the query costs ${cost}; at most ${limits.maxCost} is allowed per query (each field 1, a database lookup ${DATABASE_FIELD_WEIGHT}, a list page times its size: ask smaller pages with \`first\`)`, "COST_LIMIT");
  return cost;
}

function fieldOf(schema: GraphQLSchema, parent: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
  if (name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
  if (name === TypeNameMetaFieldDef.name) return undefined;
  return isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
}

function included(selection: SelectionNode, values: Record<string, unknown>): boolean {
  const skip = getDirectiveValues(GraphQLSkipDirective, selection, values);
  if (skip?.if === true) return false;
  const include = getDirectiveValues(GraphQLIncludeDirective, selection, values);
  return include?.if !== false;
}

function pageSize(first: unknown): number {
  return typeof first === "number" && first > 0 ? Math.min(first, MAX_PAGE) : MAX_PAGE;
}

/** A sampled-history spec's `samples` (JSON text); absent or unreadable: the default. */
function specSamples(spec: unknown): unknown {
  try {
    const value: unknown = typeof spec === "string" ? JSON.parse(spec) : null;
    return typeof value === "object" && value !== null ? (value as { samples?: unknown }).samples : undefined;
  } catch {
    return undefined;
  }
}

function listLength(value: unknown): number {
  return Array.isArray(value) ? value.length : 1;
}

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
