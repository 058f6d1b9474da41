// Counts each RPC's outcome for /metrics (srl:requests_total), every protocol alike: the status
// class is the one REST would answer (rest/error-response.ts), so gRPC and REST read the same.
import type { ConnectError, HandlerContext } from "@connectrpc/connect";
import { instruments } from "../core/metrics/index.js";
import { principalKey } from "../core/rpc/index.js";
import { httpStatusOf } from "./rest/error-response.js";

/** Returns the error, so a caller can count and rethrow in one statement. */
export function countRequest<E extends ConnectError | undefined>(endpoint: string, context: HandlerContext, error?: E): E {
  const status = error === undefined ? 200 : httpStatusOf(error);
  // A request refused before authentication has no entity.
  const entity = context.values.get(principalKey)?.entity ?? "";
  instruments.apiRequests.inc({ endpoint, entity, status_class: `${Math.floor(status / 100)}xx` });
  return error as E;
}
