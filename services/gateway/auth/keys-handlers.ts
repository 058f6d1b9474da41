// The ApiKeys service: a key lists, creates and revokes keys of its own entity only. Creating one
// is bounded per entity, so a leaked key cannot mint keys without end.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ApiKeys as ApiKeysService, type ApiKeySchema } from "../../../gen/srl/v1/keys_pb.js";
import { conflict, notFound } from "../../core/errors.js";
import { defineHandlers, principalOf } from "../../core/rpc/index.js";
import type { ApiKeyRecord, ApiKeys } from "./api-keys.js";

/** Active keys one entity may hold at once. */
export const MAX_ACTIVE_KEYS_PER_ENTITY = 100;

export function apiKeysHandlers(deps: { keys: ApiKeys }) {
  return defineHandlers(ApiKeysService, {
    async listApiKeys(_request, context) {
      const principal = principalOf(context);
      const records = await deps.keys.listOf(principal.entity);
      return { object: "list", data: records.map((record) => shown(record, principal.keyPrefix)) };
    },

    async createApiKey(request, context) {
      const principal = principalOf(context);
      if ((await deps.keys.countActiveOf(principal.entity)) >= MAX_ACTIVE_KEYS_PER_ENTITY) {
        throw conflict(`entity "${principal.entity}" already has ${MAX_ACTIVE_KEYS_PER_ENTITY} active API keys: revoke one before creating another`);
      }
      const { key, record } = await deps.keys.create(principal.entity, request.label?.trim() || undefined);
      return { key, apiKey: shown(record, principal.keyPrefix) };
    },

    async revokeApiKey(request, context) {
      const principal = principalOf(context);
      const record = await deps.keys.revokeOf(principal.entity, request.prefix);
      if (!record) throw notFound(`no API key of entity "${principal.entity}" has the prefix "${request.prefix}" (the first 12 characters, as listed)`);
      return shown(record, principal.keyPrefix);
    },
  });
}

function shown(record: ApiKeyRecord, currentPrefix: string): MessageInitShape<typeof ApiKeySchema> {
  return {
    prefix: record.prefix,
    entity: record.entity,
    createdAt: record.created_at.toISOString(),
    revokedAt: record.revoked_at?.toISOString(),
    current: record.prefix === currentPrefix,
    label: record.label ?? "",
  };
}
