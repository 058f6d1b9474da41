// The store's face: the MongoDB connection, the embedded-database launcher, the blob store and its
// signed URLs, pagination and the append-only log that services build their collections on.
export * from "./blob-store/index.js";
export { BucketedLog } from "./bucketed-log.js";
export { databaseHealth, type DatabaseHealth } from "./health.js";
export { type EmbeddedDatabase, startEmbeddedDatabase } from "./launcher.js";
export { connectDatabase, type Database, ensureIndexes, isDuplicateKey, publishDatabaseUri, runningDatabaseUri, upsertTolerant } from "./mongo.js";
export { listEnvelope, type Page, paginate } from "./pagination.js";
export { UrlSigner } from "./signed-urls.js";
