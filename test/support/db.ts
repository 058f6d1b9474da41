// Direct access to the test server's database, for what no API exposes yet (writing checkpoints
// the way the trainer will, appending events the way the worker will) and for counting what a
// delete left behind.
import { inject } from "vitest";
import { connectDatabase, type Database } from "../../services/store/mongo.js";
import { TEST_DATABASE_TIMEOUT_MS } from "./db-timeout.js";

export async function withDatabase<T>(use: (database: Database) => Promise<T>): Promise<T> {
  const database = await connectDatabase(inject("mongoUri"), inject("mongoDb"), { timeoutMs: TEST_DATABASE_TIMEOUT_MS });
  try {
    return await use(database);
  } finally {
    await database.close();
  }
}
