// Structured outputs: compilers from JSON Schema, regular expressions and choice lists to GBNF,
// the grammar format llama.cpp enforces while sampling.
export { jsonSchemaToGbnf, UnsupportedSchemaError, UnsatisfiableSchemaError, type JsonSchemaGbnfOptions } from "./json-schema.js";
export { regexToGbnf, regexRule, UnsupportedRegexError, type RegexEncoding } from "./regex.js";
export { choiceToGbnf, jsonObjectGbnf } from "./choice.js";
export { structuralTagToGbnf, StructuralTagError, type StructuralTagOptions } from "./structural-tag.js";
export type { WhitespaceOptions } from "./json-primitives.js";
