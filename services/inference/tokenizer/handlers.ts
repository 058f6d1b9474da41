// The Tokenizer service's RPCs (vLLM's /tokenize, /detokenize, /tokenizer_info), each handed to
// the endpoints of tokenizer-endpoints.ts with the caller's entity.
import { TokenizeRequestSchema, Tokenizer } from "../../../gen/srl/v1/tokenizer_pb.js";
import { defineHandlers, principalOf, sentJson } from "../../core/rpc/index.js";
import { TokenizerEndpoints, type TokenizerDeps } from "./tokenizer-endpoints.js";

export function tokenizerHandlers(deps: TokenizerDeps) {
  const endpoints = new TokenizerEndpoints(deps);
  return defineHandlers(Tokenizer, {
    async tokenize(request, context) {
      return endpoints.tokenize(principalOf(context).entity, request, sentJson(context, TokenizeRequestSchema, request));
    },
    async detokenize(request, context) {
      return endpoints.detokenize(principalOf(context).entity, request);
    },
    async getTokenizerInfo(request, context) {
      return { info: await endpoints.info(principalOf(context).entity, request.model) };
    },
  });
}
