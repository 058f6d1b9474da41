// The request as the client sent it, for handlers that store input verbatim (a REST body keeps
// keys protobuf would drop). The REST transcoder sets the raw body; other protocols fall back to the
// message in REST's JSON names.
import { toJson, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { createContextKey, type HandlerContext } from "@connectrpc/connect";

/** The REST request body as the client sent it (plain JSON). */
export const rawBodyKey = createContextKey<JsonObject | undefined>(undefined, { description: "REST request body" });

/** Set by the REST transcoder, which has already validated the JSON with pydantic's type errors. */
export const restValidatedKey = createContextKey(false, { description: "request validated by the REST decoder" });

/** The request as sent: the REST body itself, or the protobuf message in REST's JSON names. */
export function sentJson<Desc extends DescMessage>(context: HandlerContext, desc: Desc, message: MessageShape<Desc>): JsonObject {
  return context.values.get(rawBodyKey) ?? (toJson(desc, message, { useProtoFieldName: true }) as JsonObject);
}
