// `npm run worker`: a training worker process on its own (MONGODB_URI, or the running server's
// embedded database under DATA_DIR). Several may run against one database.
import { loadConfig } from "../core/config.js";
import { createLogger } from "../core/logger.js";
import { connectDatabase, runningDatabaseUri } from "../store/index.js";
import { buildServices } from "./services.js";

const config = loadConfig();
const log = createLogger({ level: config.logLevel, fields: { component: "worker" } });
const uri = config.mongodbUri ?? (await runningDatabaseUri(config.dataDir));
if (!uri) {
  log.error("no database: set MONGODB_URI, or start the server first (npm start) so its embedded database is running");
  process.exit(1);
}
const database = await connectDatabase(uri, config.mongodbDb, { timeoutMs: config.databaseTimeoutMs });
if (database.serialized) log.warn("database is FerretDB: its concurrent updates are atomic only within one process; a worker next to the server can race with it (use MongoDB for several workers)");
const { worker, trainers } = await buildServices(database.db, config, log);
worker.start();
process.stdout.write(`Training worker ${worker.id} is claiming jobs from ${uri}${config.mongodbDb}, training on ${trainers.describeTargets()}. Stop it with Ctrl-C.\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await worker.stop();
  await trainers.stop();
  await database.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
