// Who is calling, for every protocol and route: the API key's entity (authenticate.ts), charged
// to that entity's request rate before anything of the request is read or run. The presented key
// is charged first, before the database is asked, so a flood over the limit costs no lookups;
// then the entity, whatever key of it was used.
import { createHash } from "node:crypto";
import type { Principal } from "../../core/rpc/index.js";
import type { ApiKeys } from "./api-keys.js";
import { authenticate, type Credentials } from "./authenticate.js";
import { EntityRateLimit } from "./entity-rate-limit.js";

export class Callers {
  constructor(
    private readonly keys: ApiKeys,
    private readonly rate: EntityRateLimit = new EntityRateLimit(0, 1),
    /** The same limit per presented key: checked before the key is looked up. */
    private readonly keyRate: EntityRateLimit = new EntityRateLimit(0, 1),
  ) {}

  /** The caller of a request with these credentials: 401 without a valid key, 429 over its rate. */
  async authenticate(credentials: Credentials): Promise<Principal> {
    const principal = await authenticate(this.keys, credentials, (key) => this.keyRate.charge(`key:${createHash("sha256").update(key).digest("base64url")}`));
    this.rate.charge(principal.entity);
    return principal;
  }
}
