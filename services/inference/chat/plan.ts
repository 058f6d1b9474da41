// A checked chat completion request -> what the engine runs, and how its replies are read
// (tool_choice). The shared sampling options are planned as for legacy completions.
import { toJson, type JsonObject } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ChatCompletionRequest } from "../../../gen/srl/v1/inference_pb.js";
import type { GenerateRequest } from "../engine/protocol.js";
import type { ServeTarget } from "../generation/resolve-model.js";
import { planShared } from "../generation/shared-plan.js";
import { flattenTextParts } from "./messages.js";
import { checkGenerationOptions } from "./request-checks.js";
import { planTools, type ToolMode } from "./tool-choice.js";

export interface ChatPlan {
  generate: Omit<GenerateRequest, "id">;
  /** How tool calls are read from the text. */
  toolMode: ToolMode;
}

/** `sent` is the request as the client sent it; `structured` the grammar of its structured outputs, if any. */
export function planChat(request: ChatCompletionRequest, sent: JsonObject, target: ServeTarget, streaming: boolean, structured: string | null): ChatPlan {
  const tools = planTools(request.toolChoice ? toJson(ValueSchema, request.toolChoice) : undefined, request.tools.length > 0 ? ((sent.tools ?? []) as JsonObject[]) : null, request.parallelToolCalls ?? true);
  checkGenerationOptions(request, sent, { forcedToolCall: tools.grammar !== null, structuredOutput: structured !== null });
  const maxTokens = request.maxCompletionTokens ?? request.maxTokens ?? null;
  const generate: Omit<GenerateRequest, "id"> = {
    ...planShared(request, target, streaming, tools.grammar ?? structured, maxTokens),
    rawPrompt: null,
    messages: ((sent.messages ?? []) as JsonObject[]).map(flattenTextParts),
    tools: request.tools.length > 0 ? ((sent.tools ?? []) as JsonObject[]) : null,
    documents: request.documents.length > 0 ? request.documents : null,
    chatTemplate: request.chatTemplate ?? null,
    // reasoning_effort reaches the template as a variable, as vLLM passes it.
    chatTemplateKwargs: { ...(request.reasoningEffort ? { reasoning_effort: request.reasoningEffort } : {}), ...(request.chatTemplateKwargs ?? {}) },
    addGenerationPrompt: request.addGenerationPrompt ?? true,
    continueFinalMessage: request.continueFinalMessage ?? false,
    echo: request.echo ?? false,
    addSpecialTokens: request.addSpecialTokens ?? false,
    logprobs: request.logprobs ?? false,
    topLogprobs: request.topLogprobs ?? 0,
  };
  return { generate, toolMode: tools.mode };
}
