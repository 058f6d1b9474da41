// node-llama-cpp's own calls on a grammar evaluation state (its LlamaChat uses them; internal in
// the pinned version): whether a token may come next, without advancing the state, and advancing
// it by a token.
import type { LlamaGrammarEvaluationState, LlamaModel, Token } from "node-llama-cpp";

interface NativeGrammar {
  _llama: {
    _bindings: {
      AddonSampler: {
        canBeNextTokenForGrammarEvaluationState(state: unknown, token: Token): boolean;
        acceptGrammarEvaluationStateToken(state: unknown, token: Token): void;
      };
    };
  };
}

export interface GrammarCalls {
  accepts(token: Token): boolean;
  accept(token: Token): void;
}

export function grammarCalls(model: LlamaModel, state: LlamaGrammarEvaluationState): GrammarCalls {
  const native = (model as unknown as NativeGrammar)._llama._bindings.AddonSampler;
  const handle = (state as unknown as { _state: unknown })._state;
  return {
    accepts: (token) => native.canBeNextTokenForGrammarEvaluationState(handle, token),
    accept: (token) => native.acceptGrammarEvaluationStateToken(handle, token),
  };
}
