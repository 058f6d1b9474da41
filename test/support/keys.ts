// Test keys are made the way an operator makes them: in the server's database.
import { inject } from "vitest";
import { ApiKeys } from "../../services/gateway/auth/api-keys.js";
import { connectDatabase } from "../../services/store/mongo.js";
import { TEST_DATABASE_TIMEOUT_MS } from "./db-timeout.js";

export async function createKey(entity: string): Promise<string> {
  const database = await connectDatabase(inject("mongoUri"), inject("mongoDb"), { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  try {
    return (await new ApiKeys(database.db).create(entity)).key;
  } finally {
    await database.close();
  }
}

export function uniqueEntity(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
