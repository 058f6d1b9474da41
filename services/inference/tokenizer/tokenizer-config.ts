// tokenizer_info's body: what transformers' tokenizer_config.json of this vocabulary holds (vLLM
// answers the tokenizer's init kwargs plus tokenizer_class and chat_template), written from the
// GGUF's facts as the /hf endpoint's tokenizer_config.json is.
import type { JsonObject } from "@bufbuild/protobuf";
import type { TokenizerFacts } from "../engine/protocol.js";

export function tokenizerConfig(facts: TokenizerFacts): JsonObject {
  return {
    tokenizer_class: "PreTrainedTokenizerFast",
    bos_token: facts.bos?.text ?? null,
    eos_token: facts.eos?.text ?? null,
    unk_token: facts.unk?.text ?? null,
    pad_token: facts.pad?.text ?? null,
    add_bos_token: facts.addBos,
    add_eos_token: false,
    model_max_length: facts.trainContextSize,
    vocab_size: facts.vocabSize,
    ...(facts.chatTemplate ? { chat_template: facts.chatTemplate } : {}),
  };
}
