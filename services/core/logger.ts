// One structured logger for every process of the service: one JSON object per line on stderr
// (stdout stays free for command output such as a newly created API key).
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export function createLogger(
  options: { level?: LogLevel; fields?: LogFields; write?: (line: string) => void } = {},
): Logger {
  const threshold = rank[options.level ?? "info"];
  const base = options.fields ?? {};
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (rank[level] < threshold) return;
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...serializeErrors(fields) }));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

function serializeErrors(fields: LogFields | undefined): LogFields | undefined {
  if (!fields) return fields;
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    out[key] = value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;
  }
  return out;
}
