// The legacy completions endpoint (`POST /v1/completions`), unary and streamed: the request's
// checks, its prompts read and its model resolved, every prompt run through the engine, the
// events built into one `text_completion` or its chunks.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CompletionRequest, CompletionSchema } from "../../../gen/srl/v1/inference_pb.js";
import type { InferenceEngine } from "../engine/inference-engine.js";
import type { EndpointCall } from "../generation/endpoint-call.js";
import { checkChoices, type RequestLimits } from "../generation/request-bounds.js";
import type { ModelResolver } from "../generation/resolve-model.js";
import { systemFingerprint } from "../generation/response-fields.js";
import { structuredGrammar } from "../generation/structured-output.js";
import { planCompletion, readPrompts } from "./plan.js";
import { runPrompts } from "./prompt-runner.js";
import { checkPromptList, requireModel } from "./request-checks.js";
import { buildCompletion, streamCompletionChunks, type CompletionResponseOptions } from "./response-builder.js";

export class Completions {
  constructor(private readonly deps: { engine: InferenceEngine; resolver: ModelResolver; limits: RequestLimits }) {}

  async create(request: CompletionRequest, call: EndpointCall): Promise<MessageInitShape<typeof CompletionSchema>> {
    const { events, prompts, options } = await this.start(request, call, false);
    return buildCompletion(events, prompts, options);
  }

  async *stream(request: CompletionRequest, call: EndpointCall): AsyncGenerator<MessageInitShape<typeof CompletionSchema>> {
    const { events, prompts, options } = await this.start(request, call, true);
    yield* streamCompletionChunks(events, prompts, options);
  }

  private async start(request: CompletionRequest, call: EndpointCall, streaming: boolean) {
    const model = requireModel(request);
    const prompts = readPrompts(request);
    checkPromptList(prompts, request.n ?? 1, this.deps.limits);
    const target = await this.deps.resolver.resolve(call.entity(), model);
    // Before any response state is built for the prompts x n choices.
    checkChoices(request.n ?? 1, target.base.name, this.deps.limits);
    const plan = planCompletion(request, target, streaming, structuredGrammar(request, call, { sentResponseFormat: call.sent().response_format, continuedText: "" }));
    const options: CompletionResponseOptions = {
      id: request.requestId,
      model,
      systemFingerprint: systemFingerprint(target),
      n: plan.n,
      echo: plan.echo,
      logprobs: request.logprobs ?? null,
      promptLogprobs: request.promptLogprobs !== undefined,
      returnTokenIds: request.returnTokenIds ?? false,
      tokensAsIds: request.returnTokensAsTokenIds ?? false,
      // vLLM's default for completions: usage only when stream_options asks for it.
      includeUsage: request.streamOptions?.includeUsage ?? false,
    };
    return { events: runPrompts(this.deps.engine, plan, prompts, call.signal), prompts: prompts.length, options };
  }
}
