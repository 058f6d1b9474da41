// API-key authentication shared by every protocol: `Authorization: Bearer <key>`, or HTTP basic
// with the key as the password (`api:<key>`, as the wandb SDK sends it). The principal travels to
// handlers in the request's context values (services/core/rpc/principal.ts).
import { unauthenticated } from "../../core/errors.js";
import type { Principal } from "../../core/rpc/index.js";
import type { ApiKeys } from "./api-keys.js";

/** `beforeLookup` sees the presented key before the database is asked (a rate limit refuses there at no cost). */
export async function authenticate(keys: ApiKeys, authorization: string | null, beforeLookup?: (key: string) => void): Promise<Principal> {
  if (!authorization) throw unauthenticated("Not authenticated");
  const match = /^(\S+)\s+(\S+)\s*$/.exec(authorization);
  const scheme = match?.[1]?.toLowerCase();
  const key = scheme === "bearer" ? match?.[2] : scheme === "basic" ? basicPassword(match?.[2] ?? "") : undefined;
  if (!key) throw unauthenticated("Invalid authentication credentials: use 'Authorization: Bearer <API key>' (or HTTP basic with the key as password)");
  beforeLookup?.(key);
  const record = await keys.lookup(key);
  if (!record) throw unauthenticated("Invalid API key");
  return { entity: record.entity, keyPrefix: record.prefix };
}

/** The password of `Basic base64(user:password)`; undefined when malformed. */
function basicPassword(credentials: string): string | undefined {
  const decoded = Buffer.from(credentials, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon >= 0 && colon < decoded.length - 1 ? decoded.slice(colon + 1) : undefined;
}
