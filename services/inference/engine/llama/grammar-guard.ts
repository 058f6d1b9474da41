// Under a grammar, llama.cpp aborts the whole engine process when the token bans (logit_bias -100,
// bad_words, allowed_token_ids, end and stop tokens before min_tokens) remove every token the
// grammar accepts.
// Before each sampled token, this checks that at least one token is left, so such a request is
// refused with a 400 instead.
import type { LlamaGrammarEvaluationState, LlamaModel, Token } from "node-llama-cpp";
import { grammarCalls } from "./grammar-state.js";
import { endOfGenerationTokens, vocabSize } from "./model-info.js";

/** What the next step's token bias forbids. */
export interface NextTokenBans {
  isBanned(token: Token): boolean;
  /** Known (small) banned set, when bans are a short list rather than "everything but". */
  listed: readonly Token[] | null;
  /** allowed_token_ids: only these (and end-of-generation tokens) can come next. */
  onlyAllowed: readonly Token[] | null;
}

export function grammarLeavesAToken(model: LlamaModel, state: LlamaGrammarEvaluationState, bans: NextTokenBans): boolean {
  const vocabularySize = vocabSize(model);
  const { accepts } = grammarCalls(model, state);
  // A grammar that may end usually can (unless min_tokens or allowed_token_ids ban the end tokens).
  if (endOfGenerationTokens(model).some((token) => !bans.isBanned(token) && accepts(token))) return true;
  if (bans.onlyAllowed) return bans.onlyAllowed.some((token) => !bans.isBanned(token) && accepts(token));
  // Cheap common case: the grammar takes none of the banned tokens, so its choices are untouched.
  if (bans.listed && !bans.listed.some(accepts)) return true;
  for (let token = 0; token < vocabularySize; token++) {
    if (!bans.isBanned(token as Token) && accepts(token as Token)) return true;
  }
  return false;
}
