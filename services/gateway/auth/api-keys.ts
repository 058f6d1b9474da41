// API keys: random tokens shown once, stored only as SHA-256 hashes (the tokens carry 256 bits of
// entropy, so a slow password hash buys nothing), each mapping to an entity (team or user).
//
// Format: `srl_` and 43 characters of [0-9A-Za-z] (47 in all). Clients check keys before sending
// them: the wandb SDK, which the ART client uses, wants 40 or more characters of letters, digits
// and `_`, and reads what comes before a `-` as a host prefix. Keys issued in the earlier format
// (`srl_` + 43 base64url characters, which may hold `-` and `_`) still authenticate: lookups go by
// hash, whatever the format.
import { createHash, randomBytes } from "node:crypto";
import type { Collection, Db } from "mongodb";

export interface ApiKeyRecord {
  _id: string; // sha256 hex of the key
  prefix: string; // first characters, safe to show and to name a key by
  entity: string;
  created_at: Date;
  revoked_at: Date | null;
  /** What the key is for, as its creator said (keys made by the CLI have none). */
  label?: string;
}

const KEY_PREFIX = "srl_";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** 43 base-62 characters: 256 bits. */
const SECRET_LENGTH = 43;
export const API_KEY_PATTERN = /^srl_[0-9A-Za-z]{43}$/;

/** A new key's text: uniform over the alphabet (bytes past the last multiple of 62 are drawn again). */
export function generateApiKey(): string {
  const limit = 256 - (256 % ALPHABET.length);
  let secret = "";
  while (secret.length < SECRET_LENGTH) {
    for (const byte of randomBytes(SECRET_LENGTH * 2)) {
      if (byte < limit && secret.length < SECRET_LENGTH) secret += ALPHABET[byte % ALPHABET.length];
    }
  }
  return KEY_PREFIX + secret;
}

export class ApiKeys {
  private readonly keys: Collection<ApiKeyRecord>;

  constructor(db: Db) {
    this.keys = db.collection<ApiKeyRecord>("api_keys");
  }

  async ensureIndexes(): Promise<void> {
    await this.keys.createIndex({ prefix: 1 }, { unique: true });
    await this.keys.createIndex({ entity: 1 });
  }

  async create(entity: string, label?: string): Promise<{ key: string; record: ApiKeyRecord }> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(entity)) {
      throw new Error(`entity "${entity}" must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit`);
    }
    const key = generateApiKey();
    const record: ApiKeyRecord = {
      _id: hashKey(key),
      prefix: key.slice(0, KEY_PREFIX.length + 8),
      entity,
      created_at: new Date(),
      revoked_at: null,
      ...(label ? { label } : {}),
    };
    await this.keys.insertOne(record);
    return { key, record };
  }

  async list(): Promise<ApiKeyRecord[]> {
    return this.keys.find({}).sort({ created_at: 1 }).toArray();
  }

  /** One entity's keys, oldest first. */
  async listOf(entity: string): Promise<ApiKeyRecord[]> {
    return this.keys.find({ entity }).sort({ created_at: 1 }).toArray();
  }

  async countActiveOf(entity: string): Promise<number> {
    return this.keys.countDocuments({ entity, revoked_at: null });
  }

  /** Revokes one of `entity`'s keys by prefix; null when the entity has no key of that prefix. */
  async revokeOf(entity: string, prefix: string): Promise<ApiKeyRecord | null> {
    await this.keys.updateOne({ entity, prefix, revoked_at: null }, { $set: { revoked_at: new Date() } });
    return this.keys.findOne({ entity, prefix });
  }

  async count(): Promise<number> {
    return this.keys.countDocuments({});
  }

  /** Revokes by prefix (as `list` shows it) or by the full key. Returns the record, or null if none matched. */
  async revoke(prefixOrKey: string): Promise<ApiKeyRecord | null> {
    const filter = prefixOrKey.length > KEY_PREFIX.length + 8 ? { _id: hashKey(prefixOrKey) } : { prefix: prefixOrKey };
    const now = new Date();
    await this.keys.updateOne({ ...filter, revoked_at: null }, { $set: { revoked_at: now } });
    return this.keys.findOne(filter);
  }

  /** The active record of a presented key, or null. */
  async lookup(key: string): Promise<ApiKeyRecord | null> {
    if (!key.startsWith(KEY_PREFIX)) return null;
    return this.keys.findOne({ _id: hashKey(key), revoked_at: null });
  }
}

function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}
