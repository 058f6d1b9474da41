// Short-lived signed URLs for file transfers by clients that send no credentials with them (as
// with cloud storage): the wandb SDK's artifact and run files, Tinker's checkpoint downloads. The
// URL itself carries what it grants: an HMAC-SHA256 over the payload with a secret kept in the
// database (one per purpose), so every gateway on the same database accepts the URLs of every other.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Collection, Db } from "mongodb";

interface SecretRecord {
  _id: string;
  secret: string;
}

export class UrlSigner {
  private constructor(private readonly secret: Buffer) {}

  /** Reads the signing secret of `purpose` (e.g. "wandb-url-signing"), creating it on a first start (the first writer wins a race). */
  static async open(db: Db, purpose: string): Promise<UrlSigner> {
    const secrets: Collection<SecretRecord> = db.collection<SecretRecord>("service_secrets");
    await secrets.updateOne({ _id: purpose }, { $setOnInsert: { secret: randomBytes(32).toString("base64") } }, { upsert: true });
    const record = await secrets.findOne({ _id: purpose });
    if (!record) throw new Error("the URL signing secret could not be stored");
    return new UrlSigner(Buffer.from(record.secret, "base64"));
  }

  /** A token granting `payload` until `ttlMs` from now. */
  sign(payload: Record<string, string | number>, ttlMs: number): string {
    const body = Buffer.from(JSON.stringify({ ...payload, exp: Date.now() + ttlMs })).toString("base64url");
    return `${body}.${this.mac(body)}`;
  }

  /** The payload of a valid, unexpired token; null otherwise. */
  verify(token: string): Record<string, string | number> | null {
    const [body, mac, extra] = token.split(".");
    if (!body || !mac || extra !== undefined) return null;
    const expected = Buffer.from(this.mac(body));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
    } catch {
      return null;
    }
    if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return null;
    const fields = payload as Record<string, string | number>;
    if (typeof fields.exp !== "number" || fields.exp < Date.now()) return null;
    return fields;
  }

  private mac(body: string): string {
    return createHmac("sha256", this.secret).update(body).digest("base64url");
  }
}
