// API-key authentication shared by every protocol: `Authorization: Bearer <key>`, HTTP basic with
// the key as the password (`api:<key>`, as the wandb SDK sends it), or `X-API-Key: <key>` (Tinker's
// SDK, Anthropic's). A key may carry Tinker's `tml-` prefix, which the Tinker SDK insists on: it is
// dropped. The principal travels to handlers in the request's context values
// (services/core/rpc/principal.ts).
import { unauthenticated } from "../../core/errors.js";
import type { Principal } from "../../core/rpc/index.js";
import type { ApiKeys } from "./api-keys.js";

/** `beforeLookup` sees the presented key before the database is asked (a rate limit refuses there at no cost). */
export async function authenticate(keys: ApiKeys, credentials: Credentials, beforeLookup?: (key: string) => void): Promise<Principal> {
  const presented = presentedKey(credentials);
  const key = presented?.startsWith(TINKER_KEY_PREFIX) ? presented.slice(TINKER_KEY_PREFIX.length) : presented;
  if (!key) throw unauthenticated("Invalid authentication credentials: use 'Authorization: Bearer <API key>' (or HTTP basic with the key as password, or 'X-API-Key: <API key>')");
  beforeLookup?.(key);
  const record = await keys.lookup(key);
  if (!record) throw unauthenticated("Invalid API key");
  return { entity: record.entity, keyPrefix: record.prefix };
}

/** What a request presents: its Authorization header and its X-API-Key header. */
export interface Credentials {
  authorization: string | null;
  apiKey?: string | null;
}

const TINKER_KEY_PREFIX = "tml-";

/** The key presented (Authorization wins over X-API-Key); undefined when malformed; 401 when none. */
function presentedKey({ authorization, apiKey }: Credentials): string | undefined {
  if (authorization) {
    const match = /^(\S+)\s+(\S+)\s*$/.exec(authorization);
    const scheme = match?.[1]?.toLowerCase();
    return scheme === "bearer" ? match?.[2] : scheme === "basic" ? basicPassword(match?.[2] ?? "") : undefined;
  }
  if (apiKey) return /^\S+$/.test(apiKey.trim()) ? apiKey.trim() : undefined;
  throw unauthenticated("Not authenticated");
}

/** The password of `Basic base64(user:password)`; undefined when malformed. */
function basicPassword(credentials: string): string | undefined {
  const decoded = Buffer.from(credentials, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon >= 0 && colon < decoded.length - 1 ? decoded.slice(colon + 1) : undefined;
}
