// Bearer-token authentication shared by every protocol: the principal travels to handlers in the
// request's context values.
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { unauthenticated } from "../../core/errors.js";
import type { ApiKeys } from "./api-keys.js";

export interface Principal {
  entity: string;
  keyPrefix: string;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "authenticated API key" });

export async function authenticate(keys: ApiKeys, authorization: string | null): Promise<Principal> {
  if (!authorization) throw unauthenticated("Not authenticated");
  const match = /^(\S+)\s+(\S+)\s*$/.exec(authorization);
  if (!match || match[1]?.toLowerCase() !== "bearer" || !match[2]) {
    throw unauthenticated("Invalid authentication credentials: use 'Authorization: Bearer <API key>'");
  }
  const record = await keys.lookup(match[2]);
  if (!record) throw unauthenticated("Invalid API key");
  return { entity: record.entity, keyPrefix: record.prefix };
}

/** The authenticated caller of a handler (the pipeline has already refused anonymous calls). */
export function principalOf(context: HandlerContext): Principal {
  const principal = context.values.get(principalKey);
  if (!principal) throw unauthenticated("Not authenticated");
  return principal;
}
