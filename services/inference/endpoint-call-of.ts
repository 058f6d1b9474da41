// The EndpointCall an RPC handler hands its endpoint (generation/endpoint-call.ts): the one place
// the inference endpoints meet the RPC kernel. The caller and the body as sent are read when the
// endpoint gets to them.
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { principalOf, sentJson } from "../core/rpc/index.js";
import type { EndpointCall } from "./generation/endpoint-call.js";

export function endpointCallOf<Desc extends DescMessage>(context: HandlerContext, schema: Desc, request: MessageShape<Desc>): EndpointCall {
  return {
    entity: () => principalOf(context).entity,
    sent: () => sentJson(context, schema, request),
    setHeader: (name, value) => context.responseHeader.set(name, value),
    signal: context.signal,
  };
}
