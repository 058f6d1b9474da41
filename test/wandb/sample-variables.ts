// Values for a document's required variables, made from their types (a string "x", 1, true, an
// input object with its required fields, a list of one), so that a document can be costed and
// run as the SDK would send it. Optional variables stay absent: list pages then count at their
// largest size, the worst case.
import { isEnumType, isInputObjectType, isListType, isNonNullType, isScalarType, typeFromAST, type DocumentNode, type GraphQLInputType, type GraphQLSchema } from "graphql";

export function sampleVariables(schema: GraphQLSchema, document: DocumentNode): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const definition of document.definitions) {
    if (definition.kind !== "OperationDefinition") continue;
    for (const variable of definition.variableDefinitions ?? []) {
      const type = typeFromAST(schema, variable.type) as GraphQLInputType | undefined;
      if (type && isNonNullType(type) && !variable.defaultValue) values[variable.variable.name.value] = sampleValue(type);
    }
  }
  return values;
}

function sampleValue(type: GraphQLInputType): unknown {
  if (isNonNullType(type)) return sampleValue(type.ofType);
  if (isListType(type)) return [sampleValue(type.ofType)];
  if (isEnumType(type)) return type.getValues()[0]?.value;
  if (isInputObjectType(type)) {
    const fields = Object.values(type.getFields()).filter((field) => isNonNullType(field.type) && field.defaultValue === undefined);
    return Object.fromEntries(fields.map((field) => [field.name, sampleValue(field.type)]));
  }
  if (isScalarType(type)) return type.name === "Int" || type.name === "Float" ? 1 : type.name === "Boolean" ? true : type.name === "JSONString" ? "{}" : "x";
  return null;
}
