// A vocab-only llama.cpp model plus its chat template: the tokenizer training shares with the
// inference engine (services/inference/engine/llama/prompt.ts), so rows match sampled prompts token
// for token. Rendering follows ART's template inputs (spec §2.1 steps 3-5).
import type { JsonObject } from "@bufbuild/protobuf";
import { Template } from "@huggingface/jinja";
import { getLlama, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
// The same reading of the GGUF tokenizer metadata as the inference engine's.
import { chatTemplateOf, textPromptTokens, vocabTokens } from "../../../inference/index.js";
import { TrainingInputError } from "../api.js";
import { flattenTextParts, parseToolArguments, templateWantsParsedArguments } from "./messages.js";

export interface ChatTokenizerOptions {
  /** Overrides the model's tokenizer.chat_template. */
  chatTemplate?: string | null;
  /** chat_template_kwargs; they override the enable_thinking / preserve_thinking defaults. */
  chatTemplateKwargs?: JsonObject;
}

export interface RenderOptions {
  /** Leave the final message open: cut the text right after its (non-empty) content, as HF continue_final_message. */
  continueFinalMessage?: boolean;
}

export class ChatTokenizer {
  readonly templateSource: string;
  readonly vocabSize: number;
  /** The end-of-sequence id (ART maps unknown sampled token strings to it). */
  readonly eosToken: number;
  private readonly template: Template;
  private readonly kwargs: JsonObject;
  private readonly parseArguments: boolean;
  private textToId: Map<string, number> | null = null;

  constructor(
    readonly model: LlamaModel,
    options: ChatTokenizerOptions = {},
    private readonly owned = false,
  ) {
    const source = options.chatTemplate ?? chatTemplateOf(model);
    if (!source) throw new TrainingInputError("the base model's tokenizer defines no chat template");
    this.templateSource = source;
    try {
      this.template = new Template(source);
    } catch (error) {
      throw new TrainingInputError(`the chat template does not parse: ${messageOf(error)}`);
    }
    this.vocabSize = vocabTokensOf(model).length;
    const eos = model.tokens.eos ?? model.tokens.eot;
    if (eos === null) throw new TrainingInputError("the base model's tokenizer has no end-of-sequence token");
    this.eosToken = eos;
    this.parseArguments = templateWantsParsedArguments(source);
    // §2.1 step 5: thinking switches default off / on when the template reads them.
    const defaults: JsonObject = {};
    if (source.includes("enable_thinking")) defaults.enable_thinking = false;
    if (source.includes("preserve_thinking")) defaults.preserve_thinking = true;
    this.kwargs = { ...defaults, ...(options.chatTemplateKwargs ?? {}) };
  }

  /** Loads the GGUF's vocabulary only (no weights). */
  static async load(modelPath: string, options: ChatTokenizerOptions & { llama?: Llama } = {}): Promise<ChatTokenizer> {
    const llama = options.llama ?? (await getLlama({ gpu: false, build: "never", progressLogs: false }));
    const model = await llama.loadModel({ modelPath, vocabOnly: true });
    return new ChatTokenizer(model, options, true);
  }

  /** The chat-template text of messages (text parts flattened, tool arguments parsed if the template needs it). */
  render(messages: readonly JsonObject[], tools: readonly JsonObject[] | null, addGenerationPrompt: boolean, options: RenderOptions = {}): string {
    const prepared = messages.map((m) => {
      const flat = flattenTextParts(m);
      return this.parseArguments ? parseToolArguments(flat) : flat;
    });
    let text: string;
    try {
      // Same argument order as the engine: kwargs first, the fixed inputs win.
      text = this.template.render({
        ...this.kwargs,
        messages: prepared,
        tools: tools ?? undefined,
        add_generation_prompt: addGenerationPrompt,
        bos_token: this.model.tokens.bosString ?? "",
        eos_token: this.model.tokens.eosString ?? "",
      });
    } catch (error) {
      throw new TrainingInputError(`the chat template failed to render: ${messageOf(error)}`);
    }
    if (!options.continueFinalMessage) return text;
    const last = prepared[prepared.length - 1];
    const content = typeof last?.content === "string" ? last.content : "";
    if (!content) return text; // as HF: an empty final message leaves the text as rendered
    const at = text.lastIndexOf(content);
    if (at < 0) throw new TrainingInputError("continue_final_message: the final message's content does not appear in the rendered chat");
    return text.slice(0, at + content.length);
  }

  /** Token ids; special-token text (e.g. "<|im_end|>") becomes its control token when specialTokens. */
  tokenize(text: string, specialTokens = true): number[] {
    return this.model.tokenize(text, specialTokens).map(Number);
  }

  /** A legacy completion's text prompt as the completions endpoint tokenizes it. */
  promptTokens(text: string, addSpecialTokens: boolean): number[] {
    return textPromptTokens(this.model, text, addSpecialTokens).map(Number);
  }

  detokenize(tokens: readonly number[], specialTokens = true): string {
    // llama.cpp aborts the process on an out-of-range id, so it is checked here.
    const bad = tokens.find((t) => !Number.isInteger(t) || t < 0 || t >= this.vocabSize);
    if (bad !== undefined) throw new TrainingInputError(`token id ${bad} is outside the vocabulary (0..${this.vocabSize - 1})`);
    return this.model.detokenize(tokens as Token[], specialTokens);
  }

  /**
   * The id of a sampled token given as text (logprobs without return_tokens_as_token_ids): the text
   * if it is exactly one token, else a vocabulary entry that decodes to it, else the raw vocabulary
   * string (HF convert_tokens_to_ids), else null.
   */
  tokenIdOfText(text: string): number | null {
    const direct = this.tokenize(text, true);
    if (direct.length === 1) return direct[0]!;
    this.textToId ??= this.decodedVocabulary();
    const decoded = this.textToId.get(text);
    if (decoded !== undefined) return decoded;
    const raw = vocabTokensOf(this.model).indexOf(text);
    return raw >= 0 ? raw : null;
  }

  async dispose(): Promise<void> {
    if (this.owned) await this.model.dispose();
  }

  private decodedVocabulary(): Map<string, number> {
    const map = new Map<string, number>();
    for (let id = 0; id < this.vocabSize; id++) {
      const text = this.detokenize([id]);
      if (!map.has(text)) map.set(text, id);
    }
    return map;
  }
}

function vocabTokensOf(model: LlamaModel): readonly string[] {
  const tokens = vocabTokens(model);
  if (!tokens) throw new TrainingInputError("the base model file has no tokenizer.ggml.tokens");
  return tokens;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
