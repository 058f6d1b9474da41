// The chat completions endpoint (`POST /v1/chat/completions`), unary and streamed: the request's
// checks, its model resolved, its structured outputs and tools planned, the engine's events built
// into a ChatCompletion or its chunks.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ChatCompletionChunkSchema, ChatCompletionRequest, ChatCompletionSchema } from "../../../gen/srl/v1/inference_pb.js";
import type { InferenceEngine } from "../engine/inference-engine.js";
import type { EndpointCall } from "../generation/endpoint-call.js";
import { checkChoices, type RequestLimits } from "../generation/request-bounds.js";
import type { ModelResolver } from "../generation/resolve-model.js";
import { systemFingerprint } from "../generation/response-fields.js";
import { structuredGrammar } from "../generation/structured-output.js";
import { continuedText } from "./messages.js";
import { planChat } from "./plan.js";
import { checkMessages, checkPromptSize, requireModel } from "./request-checks.js";
import { buildChatCompletion, streamChatChunks, type ChatResponseOptions } from "./response-builder.js";

export class ChatCompletions {
  constructor(private readonly deps: { engine: InferenceEngine; resolver: ModelResolver; limits: RequestLimits }) {}

  async create(request: ChatCompletionRequest, call: EndpointCall): Promise<MessageInitShape<typeof ChatCompletionSchema>> {
    const { events, options } = await this.start(request, call, false);
    return buildChatCompletion(events, options);
  }

  async *stream(request: ChatCompletionRequest, call: EndpointCall): AsyncGenerator<MessageInitShape<typeof ChatCompletionChunkSchema>> {
    const { events, options } = await this.start(request, call, true);
    yield* streamChatChunks(events, options);
  }

  private async start(request: ChatCompletionRequest, call: EndpointCall, streaming: boolean) {
    const model = requireModel(request);
    const sent = call.sent();
    checkMessages(sent.messages);
    checkPromptSize(sent, this.deps.limits);
    const target = await this.deps.resolver.resolve(call.entity(), model);
    // Before any response state is built for the n choices.
    checkChoices(request.n ?? 1, target.base.name, this.deps.limits);
    const grammar = structuredGrammar(request, call, { sentResponseFormat: sent.response_format, continuedText: request.continueFinalMessage ? continuedText(sent.messages) : "" });
    const plan = planChat(request, sent, target, streaming, grammar);
    const options: ChatResponseOptions = {
      id: request.requestId,
      model,
      systemFingerprint: systemFingerprint(target),
      n: plan.generate.n,
      logprobs: plan.generate.logprobs,
      returnTokenIds: request.returnTokenIds ?? false,
      includeReasoning: request.includeReasoning ?? true,
      toolMode: plan.toolMode,
      includeUsage: request.streamOptions?.includeUsage ?? true,
      continuousUsage: request.streamOptions?.continuousUsageStats ?? false,
    };
    return { events: this.deps.engine.generate(plan.generate, call.signal), options };
  }
}
