// vLLM's tokenizer endpoints (`/tokenize`, `/detokenize`, `/tokenizer_info`, and their `/v1/`
// forms): the served model's own tokenizer, i.e. the llama.cpp vocabulary and chat template of its
// base model's GGUF, loaded without weights in the engine process. A conversation is rendered and
// tokenized exactly as a chat completion's prompt is (the engine's render), so the counts agree
// with what generation runs on. Names resolve per entity as completions resolve them; an adapter
// never changes the tokenizer, so a registered model or checkpoint tokenizes as its base model.
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { DetokenizeRequest, DetokenizeResponseSchema, TokenizeRequest, TokenizeResponseSchema } from "../../../gen/srl/v1/tokenizer_pb.js";
import { badRequest } from "../../core/errors.js";
import type { BaseModelCatalog, BaseModelEntry } from "../../models/index.js";
import { flattenTextParts } from "../chat/messages.js";
import { checkMessages } from "../chat/request-checks.js";
import type { InferenceEngine } from "../engine/inference-engine.js";
import type { BaseModelRef, GenerateRequest, RenderedPrompt, TokenizerAnswer, TokenizerOp } from "../engine/protocol.js";
import { chatPromptBytes, checkPromptBytes, type RequestLimits } from "../generation/request-bounds.js";
import type { ModelResolver } from "../generation/resolve-model.js";
import { tokenizerConfig } from "./tokenizer-config.js";

/** What these endpoints need of the embedded engine: its vocabulary work, never a generation. */
export interface VocabularyEngine {
  tokenizer(base: BaseModelRef, op: TokenizerOp): Promise<TokenizerAnswer>;
  render(request: Omit<GenerateRequest, "id">, contextSize: number): Promise<RenderedPrompt>;
}

export interface TokenizerDeps {
  vocabulary: VocabularyEngine;
  /** The engines that serve: the context a model has here (max_model_len). */
  engine: InferenceEngine;
  resolver: ModelResolver;
  catalog: BaseModelCatalog;
  limits: RequestLimits;
  /** TOKENIZER_DEFAULT_MODEL ("" = the first BASE_MODELS entry, else the first built-in). */
  defaultModel: string;
}

export class TokenizerEndpoints {
  constructor(private readonly deps: TokenizerDeps) {}

  async tokenize(entity: string, request: TokenizeRequest, sent: JsonObject): Promise<MessageInitShape<typeof TokenizeResponseSchema>> {
    const hasPrompt = request.prompt !== undefined;
    const hasMessages = sent.messages !== undefined && sent.messages !== null;
    if (hasPrompt === hasMessages) throw badRequest("give either `prompt` (a text) or `messages` (a conversation), not both or neither");
    const base = await this.baseOf(entity, request.model);
    const maxModelLen = await this.maxModelLen(base);
    let tokens: number[];
    let pieces: string[] | null = null;
    if (hasPrompt) {
      const text = request.prompt ?? "";
      checkPromptBytes(Buffer.byteLength(text, "utf8"), "prompt", this.deps.limits);
      const answer = await this.deps.vocabulary.tokenizer(base, { kind: "tokenize", text, addSpecialTokens: request.addSpecialTokens ?? true });
      if (answer.kind !== "tokenize") throw new Error(`engine answered ${answer.kind} to tokenize`);
      ({ tokens, pieces } = answer);
    } else {
      checkMessages(sent.messages);
      checkPromptBytes(chatPromptBytes(sent, this.deps.limits.maxPromptBytes), "messages", this.deps.limits);
      if (request.addGenerationPrompt === true && request.continueFinalMessage === true) {
        throw badRequest("Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
      }
      const rendered = await this.deps.vocabulary.render(conversationPlan(base, entity, request, sent), maxModelLen + 1);
      tokens = rendered.promptTokenIds;
    }
    if (request.returnTokenStrs && pieces === null) {
      const answer = await this.deps.vocabulary.tokenizer(base, { kind: "pieces", tokens });
      if (answer.kind !== "pieces") throw new Error(`engine answered ${answer.kind} to pieces`);
      pieces = answer.pieces;
    }
    return { count: tokens.length, maxModelLen, tokens, tokenStrs: request.returnTokenStrs ? (pieces ?? []) : [] };
  }

  async detokenize(entity: string, request: DetokenizeRequest): Promise<MessageInitShape<typeof DetokenizeResponseSchema>> {
    const base = await this.baseOf(entity, request.model);
    const answer = await this.deps.vocabulary.tokenizer(base, { kind: "detokenize", tokens: request.tokens });
    if (answer.kind !== "detokenize") throw new Error(`engine answered ${answer.kind} to detokenize`);
    return { prompt: answer.text };
  }

  async info(entity: string, model: string | undefined): Promise<JsonObject> {
    const base = await this.baseOf(entity, model);
    const answer = await this.deps.vocabulary.tokenizer(base, { kind: "info" });
    if (answer.kind !== "info") throw new Error(`engine answered ${answer.kind} to info`);
    return tokenizerConfig(answer.info);
  }

  /** The base model whose tokenizer a name uses (404 as completions give for a name the caller cannot use). */
  private async baseOf(entity: string, model: string | undefined): Promise<BaseModelRef> {
    const found = await this.deps.resolver.find(entity, model || this.defaultModel());
    return { name: found.base.name, source: found.base.source, scheduling: found.base.scheduling };
  }

  private defaultModel(): string {
    if (this.deps.defaultModel) return this.deps.defaultModel;
    const entries = this.deps.catalog.names().map((name) => this.deps.catalog.get(name) as BaseModelEntry);
    const configured = entries.find((entry) => !entry.source.startsWith("builtin:"));
    return (configured ?? entries[0])?.name ?? "";
  }

  private async maxModelLen(base: BaseModelRef): Promise<number> {
    const { maxModelLen } = await this.deps.engine.describeModel(base);
    if (maxModelLen === null) throw badRequest(`the model file of ${base.name} cannot be read here yet; retry once it is available`);
    return maxModelLen;
  }
}

/** A conversation's prompt as a chat completion would build it (nothing is generated from it). */
function conversationPlan(base: BaseModelRef, entity: string, request: TokenizeRequest, sent: JsonObject): Omit<GenerateRequest, "id"> {
  return {
    base,
    tenant: entity,
    adapterPath: null,
    priority: 0,
    rawPrompt: null,
    messages: ((sent.messages ?? []) as JsonObject[]).map(flattenTextParts),
    tools: request.tools.length > 0 ? ((sent.tools ?? []) as JsonObject[]) : null,
    documents: null,
    chatTemplate: request.chatTemplate ?? null,
    chatTemplateKwargs: request.chatTemplateKwargs ?? {},
    addGenerationPrompt: request.addGenerationPrompt ?? true,
    continueFinalMessage: request.continueFinalMessage ?? false,
    echo: false,
    addSpecialTokens: request.addSpecialTokens ?? false,
    truncatePromptTokens: null,
    cacheSalt: null,
    n: 1,
    beamSearch: null,
    maxTokens: 0,
    minTokens: 0,
    sampling: { temperature: 0, topP: null, topK: null, minP: null, seed: null, frequencyPenalty: 0, presencePenalty: 0, repetitionPenalty: null },
    logitBias: {},
    badWords: [],
    allowedTokenIds: null,
    stop: [],
    stopTokenIds: [],
    includeStopStrInOutput: false,
    ignoreEos: false,
    skipSpecialTokens: false,
    spacesBetweenSpecialTokens: false,
    grammar: null,
    repetitionDetection: null,
    logprobs: false,
    topLogprobs: 0,
    promptLogprobs: null,
    returnTokensAsTokenIds: false,
    returnTokenIds: false,
  };
}
