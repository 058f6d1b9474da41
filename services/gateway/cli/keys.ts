// `npm run keys -- create --entity NAME | list | revoke PREFIX`: manage API keys in the database the
// server uses (MONGODB_URI, or the embedded database under DATA_DIR, started for the command).
// `create` prints only the new key on stdout, so scripts can capture it.
import { parseArgs } from "node:util";
import { loadConfig } from "../../core/config.js";
import { createLogger } from "../../core/logger.js";
import { connectDatabase, type EmbeddedDatabase, runningDatabaseUri, startEmbeddedDatabase } from "../../store/index.js";
import { ApiKeys } from "../auth/api-keys.js";

const usage = `usage: npm run keys -- create --entity NAME
       npm run keys -- list
       npm run keys -- revoke PREFIX`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: { entity: { type: "string" } } });
  const [command, argument] = positionals;
  if (command !== "create" && command !== "list" && command !== "revoke") {
    process.stderr.write(usage + "\n");
    return 2;
  }
  if (command === "create" && !values.entity) {
    process.stderr.write("create needs --entity NAME\n" + usage + "\n");
    return 2;
  }
  if (command === "revoke" && !argument) {
    process.stderr.write("revoke needs the key's prefix (see `list`)\n" + usage + "\n");
    return 2;
  }
  const config = loadConfig();
  const log = createLogger({ level: "warn" });
  let embedded: EmbeddedDatabase | undefined;
  // A running server's embedded database is shared rather than opened a second time.
  const uri =
    config.mongodbUri ??
    (await runningDatabaseUri(config.dataDir)) ??
    (embedded = await startEmbeddedDatabase({ dataDir: config.dataDir, prefer: config.embeddedDatabase, log: (level, msg, f) => log[level](msg, f) })).uri;
  const database = await connectDatabase(uri, config.mongodbDb, { timeoutMs: config.databaseTimeoutMs });
  try {
    const keys = new ApiKeys(database.db);
    await keys.ensureIndexes();
    if (command === "create") {
      const { key, record } = await keys.create(values.entity as string);
      process.stdout.write(key + "\n");
      process.stderr.write(`created key ${record.prefix}… for entity "${record.entity}"; it is not shown again\n`);
    } else if (command === "list") {
      for (const record of await keys.list()) {
        const state = record.revoked_at ? `revoked ${record.revoked_at.toISOString()}` : "active";
        process.stdout.write(`${record.prefix}\t${record.entity}\t${record.created_at.toISOString()}\t${state}${record.label ? `\t${record.label}` : ""}\n`);
      }
    } else {
      const record = await keys.revoke(argument as string);
      if (!record) {
        process.stderr.write(`no key matches "${argument}"\n`);
        return 1;
      }
      process.stderr.write(`revoked key ${record.prefix}… of entity "${record.entity}"\n`);
    }
    return 0;
  } finally {
    await database.close();
    await embedded?.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`keys: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
