// The caller of a handler. The gateway authenticates the request and puts the principal in the
// request's context values; handlers read it with principalOf.
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { unauthenticated } from "../errors.js";

export interface Principal {
  entity: string;
  keyPrefix: string;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "authenticated API key" });

/** The authenticated caller of a handler (the gateway has already refused anonymous calls). */
export function principalOf(context: HandlerContext): Principal {
  const principal = context.values.get(principalKey);
  if (!principal) throw unauthenticated("Not authenticated");
  return principal;
}
