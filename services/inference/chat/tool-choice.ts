// `tool_choice` -> how replies are read and, when a call is forced, the grammar that forces it
// (as vLLM does it: "required" constrains the output to a JSON list of {"name", "parameters"}
// objects of the offered tools, a named function to that function's parameters object).
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { badRequest } from "../../core/errors.js";
import { jsonSchemaToGbnf, UnsatisfiableSchemaError, UnsupportedSchemaError } from "../grammar/index.js";

export type ToolMode =
  | { kind: "none" }
  /** Hermes <tool_call> blocks in the text become calls. */
  | { kind: "auto"; maxCalls: number }
  /** The whole output is the arguments of this function. */
  | { kind: "named"; name: string }
  /** The whole output is a JSON list of calls. */
  | { kind: "required"; maxCalls: number };

export interface ToolPlan {
  mode: ToolMode;
  grammar: string | null;
}

/** `toolChoice` as the client sent it (JSON), `tools` likewise (null when none were offered). */
export function planTools(toolChoice: JsonValue | undefined, tools: JsonObject[] | null, parallelToolCalls: boolean): ToolPlan {
  const maxCalls = parallelToolCalls ? Number.MAX_SAFE_INTEGER : 1;
  const choice = toolChoice ?? "none";
  if (choice === "none" || choice === null) return { mode: { kind: "none" }, grammar: null };
  if (choice === "auto") return { mode: tools ? { kind: "auto", maxCalls } : { kind: "none" }, grammar: null };
  if (!tools) throw badRequest(`tool_choice: ${JSON.stringify(choice)} needs tools`);
  const functions = tools.map((tool, index) => describeTool(tool, index));
  if (choice === "required") {
    const schema: JsonObject = {
      type: "array",
      minItems: 1,
      ...(parallelToolCalls ? {} : { maxItems: 1 }),
      items: {
        anyOf: functions.map((f) => ({
          type: "object",
          properties: { name: { const: f.name }, parameters: f.parameters },
          required: ["name", "parameters"],
          additionalProperties: false,
        })),
      },
    };
    return { mode: { kind: "required", maxCalls }, grammar: compile(schema, "tools[].function.parameters") };
  }
  const name = namedFunction(choice);
  const chosen = functions.find((f) => f.name === name);
  if (!chosen) throw badRequest(`tool_choice: the function "${name}" is not among the tools (${functions.map((f) => f.name).join(", ")})`);
  return { mode: { kind: "named", name }, grammar: compile(chosen.parameters, `tools[${chosen.index}].function.parameters`) };
}

function describeTool(tool: JsonObject, index: number): { index: number; name: string; parameters: JsonValue } {
  const fn = tool.function;
  if (typeof fn !== "object" || fn === null || Array.isArray(fn) || typeof fn.name !== "string") throw badRequest(`tools[${index}]: a function with a name is required`);
  // No parameters: any JSON object (OpenAI's reading of an omitted schema).
  return { index, name: fn.name, parameters: fn.parameters ?? { type: "object" } };
}

function namedFunction(choice: JsonValue): string {
  if (typeof choice === "object" && choice !== null && !Array.isArray(choice)) {
    const fn = choice.function;
    if (typeof fn === "object" && fn !== null && !Array.isArray(fn) && typeof fn.name === "string") return fn.name;
  }
  throw badRequest(`tool_choice: expected "none", "auto", "required" or {"type": "function", "function": {"name": ...}}, got ${JSON.stringify(choice)}`);
}

function compile(schema: JsonValue, where: string): string {
  try {
    return jsonSchemaToGbnf(schema);
  } catch (error) {
    if (error instanceof UnsupportedSchemaError || error instanceof UnsatisfiableSchemaError) throw badRequest(`${where}: ${error.message}`);
    throw error;
  }
}
