// `response_format` and `structured_outputs` -> the GBNF grammar the engine enforces while
// sampling (never by retrying). Schema keywords or regex constructs outside what the compilers
// support are a 400 naming them — except where `structured_outputs.disable_fallback` is false,
// which allows falling back to "any JSON object" (reported in a response header).
//
// Structural tags describe a whole assistant message (free text with tagged JSON in it), so when
// the request continues its final message, the tag's grammar starts where that message's text
// leaves it: a message ending in a trigger forces the tag to follow. The other constraints apply
// to the generated text alone, as in vLLM.
import { type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { ChatCompletionRequest } from "../../../gen/srl/v1/inference_pb.js";
import { clipText } from "../../core/clip.js";
import { badRequest } from "../../core/errors.js";
import { choiceToGbnf, jsonObjectGbnf, jsonSchemaToGbnf, regexToGbnf, StructuralTagError, structuralTagToGbnf, UnsatisfiableSchemaError, UnsupportedRegexError, UnsupportedSchemaError } from "../grammar/index.js";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { EndpointCall } from "./endpoint-call.js";

export interface StructuredOutput {
  grammar: string | null;
  /** Set when an unsupported schema was loosened to "any JSON object". */
  fallback: string | null;
}

/** What the request sent beyond its parsed fields: `response_format` as JSON, and the text a continued final message already has. */
export interface StructuredOutputContext {
  /** The client's `response_format` JSON as sent (vLLM's structural-tag form keeps its fields there). */
  sentResponseFormat: JsonValue | undefined;
  /** continue_final_message: the final message's text; "" otherwise. */
  continuedText: string;
}

/** The grammar of either request kind's structured outputs; a fallback is reported in a response header. */
export function structuredGrammar(request: Pick<ChatCompletionRequest, "responseFormat" | "structuredOutputs">, call: EndpointCall, context: StructuredOutputContext): string | null {
  const structured = structuredOutput(request, context);
  // A header value holds printable ASCII only (the reason may quote the client's schema).
  if (structured.fallback) call.setHeader("srl-structured-output-fallback", clipText(structured.fallback.replace(/[^\x20-\x7e]/g, "?"), 1024));
  return structured.grammar;
}

/** Reads only the two fields chat and legacy completions share. */
export function structuredOutput(request: Pick<ChatCompletionRequest, "responseFormat" | "structuredOutputs">, context: StructuredOutputContext): StructuredOutput {
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
      if (error instanceof StructuralTagError) throw badRequest(`${field}: ${error.message}`);
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
  const structuralTag = (field: string, tag: JsonValue) => compile(field, () => structuralTagToGbnf(tag, { ...whitespace, prefix: context.continuedText }), false);
  if (fromFormat === "structural_tag") return structuralTag("response_format", responseFormatTag(format?.structuralTag, context.sentResponseFormat));
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
  return structuralTag("structured_outputs.structural_tag", so.structuralTag as string);
}

/**
 * The structural tag of `response_format: {type: "structural_tag", ...}`: vLLM's fields
 * (`structures` and `triggers`, or xgrammar's `format`) beside `type` as the client sent them, or,
 * from typed clients, the `structural_tag` object.
 */
function responseFormatTag(typed: JsonValue | undefined, sent: JsonValue | undefined): JsonValue {
  const raw = typeof sent === "object" && sent !== null && !Array.isArray(sent) ? sent : {};
  if ("structures" in raw || "triggers" in raw || "format" in raw) {
    // Only the tag's own fields: type, json_schema and structural_tag belong to response_format.
    return Object.fromEntries(Object.entries(raw as JsonObject).filter(([key]) => !["type", "json_schema", "structural_tag"].includes(key)));
  }
  if (typed !== undefined) return typed;
  throw badRequest('response_format: type "structural_tag" needs "structures" and "triggers" (or xgrammar\'s "format")');
}
