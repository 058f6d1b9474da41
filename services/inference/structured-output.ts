// `response_format` and `structured_outputs` -> the GBNF grammar the engine enforces while
// sampling (never by retrying). Schema keywords or regex constructs outside what the compilers
// support are a 400 naming them — except where `structured_outputs.disable_fallback` is false,
// which allows falling back to "any JSON object" (reported in a response header).
import type { JsonValue } from "@bufbuild/protobuf";
import type { ChatCompletionRequest } from "../../gen/srl/v1/inference_pb.js";
import { badRequest } from "../core/errors.js";
import { choiceToGbnf, jsonObjectGbnf, jsonSchemaToGbnf, regexToGbnf, UnsatisfiableSchemaError, UnsupportedRegexError, UnsupportedSchemaError } from "./grammar/index.js";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";

export interface StructuredOutput {
  grammar: string | null;
  /** Set when an unsupported schema was loosened to "any JSON object". */
  fallback: string | null;
}

/** Reads only the two fields chat and legacy completions share. */
export function structuredOutput(request: Pick<ChatCompletionRequest, "responseFormat" | "structuredOutputs">): StructuredOutput {
  const format = request.responseFormat;
  const so = request.structuredOutputs;
  const fromFormat = format && format.type !== "text" ? format.type : null;
  const constraints = so ? [so.json ? "json" : null, so.regex !== undefined ? "regex" : null, so.choice.length > 0 ? "choice" : null, so.grammar !== undefined ? "grammar" : null, so.jsonObject ? "json_object" : null, so.structuralTag !== undefined ? "structural_tag" : null].filter((c) => c !== null) : [];
  if (constraints.length + (fromFormat ? 1 : 0) > 1) {
    throw badRequest(`structured outputs: give one constraint, not ${[...(fromFormat ? [`response_format ${fromFormat}`] : []), ...constraints.map((c) => `structured_outputs.${c}`)].join(" and ")}`);
  }
  const whitespace = {
    disableAnyWhitespace: so?.disableAnyWhitespace ?? false,
    ...(so?.whitespacePattern !== undefined ? { whitespacePattern: so.whitespacePattern } : {}),
  };
  const compile = (field: string, build: () => string, fallbackAllowed: boolean): StructuredOutput => {
    try {
      return { grammar: build(), fallback: null };
    } catch (error) {
      if (error instanceof UnsupportedSchemaError || error instanceof UnsupportedRegexError || error instanceof UnsatisfiableSchemaError) {
        if (fallbackAllowed && error instanceof UnsupportedSchemaError) return { grammar: jsonObjectGbnf(), fallback: `${field}: ${error.message}; any JSON object allowed instead` };
        throw badRequest(`${field}: ${error.message}`);
      }
      throw error;
    }
  };

  if (fromFormat === "json_object") return { grammar: jsonObjectGbnf(), fallback: null };
  if (fromFormat === "json_schema") {
    const schema = format?.jsonSchema?.schema;
    if (!schema) throw badRequest("response_format.json_schema.schema is required for type json_schema");
    return compile("response_format.json_schema.schema", () => jsonSchemaToGbnf(schema, {}), false);
  }
  if (fromFormat === "structural_tag") throw badRequest('response_format: type "structural_tag" is not supported by this engine');
  if (!so || constraints.length === 0) return { grammar: null, fallback: null };

  const fallbackAllowed = !(so.disableFallback ?? false);
  if (so.json) {
    const raw = toJson(ValueSchema, so.json);
    let schema: JsonValue = raw;
    if (typeof raw === "string") {
      try {
        schema = JSON.parse(raw) as JsonValue;
      } catch {
        throw badRequest("structured_outputs.json: not valid JSON");
      }
    }
    return compile("structured_outputs.json", () => jsonSchemaToGbnf(schema, { ...whitespace, disableAdditionalProperties: so.disableAdditionalProperties ?? false }), fallbackAllowed);
  }
  if (so.regex !== undefined) return compile("structured_outputs.regex", () => regexToGbnf(so.regex as string), false);
  if (so.choice.length > 0) return { grammar: choiceToGbnf(so.choice), fallback: null };
  if (so.grammar !== undefined) return { grammar: so.grammar, fallback: null };
  if (so.jsonObject) return compile("structured_outputs.whitespace_pattern", () => jsonObjectGbnf(whitespace), false);
  throw badRequest("structured_outputs.structural_tag: not supported by this engine");
}
