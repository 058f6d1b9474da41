// Inference service: OpenAI-compatible chat completions and legacy completions on base models and
// on registered models' checkpoints, unary and streamed, and the model listing that names them.
import { ChatCompletionRequestSchema, CompletionRequestSchema, Inference, type ChatCompletionRequest, type CompletionRequest } from "../../gen/srl/v1/inference_pb.js";
import type { HandlerContext } from "@connectrpc/connect";
import { toJson, type JsonObject } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { principalOf } from "../gateway/auth/authenticate.js";
import { defineHandlers, sentJson } from "../gateway/pipeline.js";
import { clipText } from "../core/clip.js";
import { badRequest } from "../core/errors.js";
import type { BaseModelCatalog } from "../models/catalog.js";
import type { Checkpoints } from "../models/checkpoints.js";
import type { ModelRegistry } from "../models/registry.js";
import type { InferenceEngine } from "./engine/inference-engine.js";
import { buildCompletion, streamChunks, type CompletionOptions } from "./completion-builder.js";
import { buildLegacyCompletion, streamLegacyChunks, type LegacyOptions } from "./legacy-completion-builder.js";
import { planLegacyCompletion, readPrompts } from "./legacy-completion-plan.js";
import { checkMessages, continuedText } from "./message-rules.js";
import { runPrompts } from "./prompt-runner.js";
import { planGeneration } from "./request-plan.js";
import { ServedModels } from "./served-models.js";
import { structuredOutput } from "./structured-output.js";
import { planTools } from "./tool-choice.js";
import type { ModelResolver } from "./resolve-model.js";

export function inferenceHandlers(deps: { engine: InferenceEngine; resolver: ModelResolver; catalog: BaseModelCatalog; registry: ModelRegistry; checkpoints: Checkpoints }) {
  const served = new ServedModels(deps);

  /** Structured outputs of either request kind; a fallback is reported in a response header. */
  const grammarOf = (request: Pick<ChatCompletionRequest, "responseFormat" | "structuredOutputs">, context: HandlerContext, sent: JsonObject, continuedText: string) => {
    const structured = structuredOutput(request, { sentResponseFormat: sent.response_format, continuedText });
    // A header value holds printable ASCII only (the reason may quote the client's schema).
    if (structured.fallback) context.responseHeader.set("srl-structured-output-fallback", clipText(structured.fallback.replace(/[^\x20-\x7e]/g, "?"), 1024));
    return structured.grammar;
  };

  const startChat = async (request: ChatCompletionRequest, context: HandlerContext, streaming: boolean) => {
    if (!request.model) throw badRequest("model is required");
    const sent = sentJson(context, ChatCompletionRequestSchema, request);
    checkMessages(sent.messages);
    const target = await deps.resolver.resolve(principalOf(context).entity, request.model);
    const grammar = grammarOf(request, context, sent, request.continueFinalMessage ? continuedText(sent.messages) : "");
    const tools = planTools(request.toolChoice ? toJson(ValueSchema, request.toolChoice) : undefined, request.tools.length > 0 ? ((sent.tools ?? []) as JsonObject[]) : null, request.parallelToolCalls ?? true);
    if (tools.grammar !== null && grammar !== null) throw badRequest(`tool_choice: a forced tool call cannot be combined with structured outputs (response_format / structured_outputs)`);
    const plan = planGeneration(request, sent, target, streaming, tools.grammar ?? grammar);
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

  const startLegacy = async (request: CompletionRequest, context: HandlerContext, streaming: boolean) => {
    if (!request.model) throw badRequest("model is required");
    const prompts = readPrompts(request);
    const target = await deps.resolver.resolve(principalOf(context).entity, request.model);
    const plan = planLegacyCompletion(request, target, streaming, grammarOf(request, context, sentJson(context, CompletionRequestSchema, request), ""));
    const options: LegacyOptions = {
      id: request.requestId,
      model: request.model,
      n: plan.n,
      echo: plan.echo,
      logprobs: request.logprobs ?? null,
      promptLogprobs: request.promptLogprobs !== undefined,
      returnTokenIds: request.returnTokenIds ?? false,
      tokensAsIds: request.returnTokensAsTokenIds ?? false,
      // vLLM's default for completions: usage only when stream_options asks for it.
      includeUsage: request.streamOptions?.includeUsage ?? false,
    };
    return { events: runPrompts(deps.engine, plan, prompts, context.signal), prompts: prompts.length, options };
  };

  return defineHandlers(Inference, {
    async createChatCompletion(request, context) {
      const { events, options } = await startChat(request, context, false);
      return buildCompletion(events, options);
    },
    async *streamChatCompletion(request, context) {
      const { events, options } = await startChat(request, context, true);
      yield* streamChunks(events, options);
    },
    async createCompletion(request, context) {
      const { events, prompts, options } = await startLegacy(request, context, false);
      return buildLegacyCompletion(events, prompts, options);
    },
    async *streamCompletion(request, context) {
      const { events, prompts, options } = await startLegacy(request, context, true);
      yield* streamLegacyChunks(events, prompts, options);
    },
    async listServedModels(request, context) {
      return { object: "list", data: await served.list(principalOf(context).entity, request.includeSteps ?? false) };
    },
    async getServedModel(request, context) {
      return served.get(principalOf(context).entity, request.model);
    },
  });
}
