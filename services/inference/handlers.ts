// Inference service: OpenAI-compatible chat completions on base models and on registered models'
// checkpoints, unary and streamed.
import { ChatCompletionRequestSchema, Inference, type ChatCompletionRequest } from "../../gen/srl/v1/inference_pb.js";
import type { HandlerContext } from "@connectrpc/connect";
import { toJson, type JsonObject } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { principalOf } from "../gateway/auth/authenticate.js";
import { defineHandlers, sentJson } from "../gateway/pipeline.js";
import { clipText } from "../core/clip.js";
import { badRequest } from "../core/errors.js";
import type { EngineClient } from "./engine/client.js";
import { buildCompletion, streamChunks, type CompletionOptions } from "./completion-builder.js";
import { planGeneration } from "./request-plan.js";
import { structuredOutput } from "./structured-output.js";
import { planTools } from "./tool-choice.js";
import type { ModelResolver } from "./resolve-model.js";

export function inferenceHandlers(deps: { engine: EngineClient; resolver: ModelResolver }) {
  const start = async (request: ChatCompletionRequest, context: HandlerContext, streaming: boolean) => {
    if (!request.model) throw badRequest("model is required");
    const target = await deps.resolver.resolve(principalOf(context).entity, request.model);
    const structured = structuredOutput(request);
    // A header value holds printable ASCII only (the reason may quote the client's schema).
    if (structured.fallback) context.responseHeader.set("srl-structured-output-fallback", clipText(structured.fallback.replace(/[^\x20-\x7e]/g, "?"), 1024));
    const sent = sentJson(context, ChatCompletionRequestSchema, request);
    const tools = planTools(request.toolChoice ? toJson(ValueSchema, request.toolChoice) : undefined, request.tools.length > 0 ? ((sent.tools ?? []) as JsonObject[]) : null, request.parallelToolCalls ?? true);
    if (tools.grammar !== null && structured.grammar !== null) throw badRequest(`tool_choice: a forced tool call cannot be combined with structured outputs (response_format / structured_outputs)`);
    const plan = planGeneration(request, sent, target, streaming, tools.grammar ?? structured.grammar);
    const options: CompletionOptions = {
      id: request.requestId,
      model: request.model,
      n: plan.n,
      logprobs: plan.logprobs,
      returnTokenIds: request.returnTokenIds ?? false,
      includeReasoning: request.includeReasoning ?? true,
      toolMode: tools.mode,
      includeUsage: request.streamOptions?.includeUsage ?? true,
      continuousUsage: request.streamOptions?.continuousUsageStats ?? false,
    };
    return { events: deps.engine.generate(plan, context.signal), options };
  };

  return defineHandlers(Inference, {
    async createChatCompletion(request, context) {
      const { events, options } = await start(request, context, false);
      return buildCompletion(events, options);
    },
    async *streamChatCompletion(request, context) {
      const { events, options } = await start(request, context, true);
      yield* streamChunks(events, options);
    },
  });
}
