// The one place where domain errors become protocol errors: every service throws ApiError (or a
// helper below); the gateway turns it into a ConnectError (Connect and gRPC) and, for REST, into an
// HTTP status and body (see ../gateway/rest/error-response.ts, which reads the ConnectError only).
import { create, fromJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { MongoError, MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerClosedError, MongoServerError, MongoServerSelectionError, MongoTopologyClosedError } from "mongodb";
import { ValidationErrorSchema } from "../../gen/srl/v1/errors_pb.js";
import { clipJson, clipText, MESSAGE_CHARS } from "./clip.js";

export type ErrorKind =
  | "validation"
  | "bad_request"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "conflict"
  | "overloaded"
  | "unavailable"
  | "unimplemented"
  | "cancelled"
  | "internal";

/** A pydantic-style validation failure: `loc` starts with "body", "query" or "path". */
export interface Violation {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: JsonValue;
  ctx?: JsonObject;
}

/** A message to use as the whole error body on REST (e.g. the system check report with 503). */
export interface ErrorBody<Desc extends DescMessage = DescMessage> {
  schema: Desc;
  message: MessageShape<Desc>;
}

/** pydantic's wording for a list of allowed values: "'a' or 'b'", "'a', 'b' or 'c'". */
export function expectedLiterals(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  return quoted.length <= 1 ? (quoted[0] ?? "") : `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

export class ApiError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly violations: Violation[] = [],
    readonly body?: ErrorBody,
    /** Seconds after which a retry may succeed (overloaded and unavailable errors: Retry-After). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const validationError = (violations: Violation[]) => {
  const named = violations.slice(0, 10).map((v) => `${v.loc.map((part) => clipText(String(part), 64)).join(".")}: ${v.msg}`);
  const more = violations.length > named.length ? `; and ${violations.length - named.length} more` : "";
  return new ApiError("validation", named.join("; ") + more, violations);
};
export const badRequest = (message: string) => new ApiError("bad_request", message);
export const notFound = (message: string) => new ApiError("not_found", message);
export const conflict = (message: string) => new ApiError("conflict", message);
export const unauthenticated = (message: string) => new ApiError("unauthenticated", message);
/** 429: a limit was reached; the message names the limit, `retryAfterSeconds` says when to try again. */
export const overloaded = (message: string, retryAfterSeconds = 1) => new ApiError("overloaded", message, [], undefined, Math.max(1, Math.ceil(retryAfterSeconds)));
export const unavailable = (message: string, body?: ErrorBody) => new ApiError("unavailable", message, [], body);
export const unimplemented = (what: string) =>
  new ApiError("unimplemented", `${what} is not available in this version of the service yet`);

const codeOfKind: Record<ErrorKind, Code> = {
  validation: Code.InvalidArgument,
  bad_request: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  not_found: Code.NotFound,
  conflict: Code.AlreadyExists,
  overloaded: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  unimplemented: Code.Unimplemented,
  cancelled: Code.Canceled,
  internal: Code.Internal,
};

/**
 * Messages toConnectError attaches as error details, for whoever must describe them (gRPC server
 * reflection): no method signature references them. An ErrorBody is the failing method's own
 * response type (REST finds it as such), so it is described with the method.
 */
export const errorDetailSchemas: readonly DescMessage[] = [ValidationErrorSchema];

/** Violations listed in one error (its message counts them all). */
export const MAX_VIOLATIONS = 100;

/**
 * Any thrown value as a ConnectError; validation violations travel as a srl.v1.ValidationError
 * detail. What the error echoes of the request is clipped here (core/clip.ts), for every protocol.
 */
export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof ApiError) {
    const details: { desc: DescMessage; value: MessageShape<DescMessage> }[] = [];
    const listed = error.violations.slice(0, MAX_VIOLATIONS);
    if (listed.length > 0) {
      details.push({
        desc: ValidationErrorSchema,
        value: create(ValidationErrorSchema, {
          detail: listed.map((v) => ({
            loc: fromJson(ListValueSchema, v.loc.map((part) => (typeof part === "string" ? clipText(part) : part))),
            msg: clipText(v.msg, MESSAGE_CHARS),
            type: v.type,
            ...(v.input !== undefined ? { input: fromJson(ValueSchema, clipJson(v.input)) } : {}),
            ...(v.ctx !== undefined ? { ctx: clipJson(v.ctx) as JsonObject } : {}),
          })),
        }),
      });
    }
    if (error.body) details.push({ desc: error.body.schema, value: error.body.message });
    // Retry-After travels as response metadata: a header on Connect and REST, trailing metadata on gRPC.
    const metadata = error.retryAfterSeconds === undefined ? undefined : { "retry-after": String(error.retryAfterSeconds) };
    return new ConnectError(clipText(error.message, MESSAGE_CHARS), codeOfKind[error.kind], metadata, details, error);
  }
  if (isDatabaseUnavailable(error)) {
    return new ConnectError(`the database is unavailable, try again shortly (${clipText(error.message, 200)})`, Code.Unavailable, undefined, undefined, error);
  }
  return ConnectError.from(error, Code.Internal);
}

// Server errors of a replica set changing primary or shutting down (MongoDB's error codes).
const TRANSIENT_SERVER_CODES = new Set([
  91, // ShutdownInProgress
  189, // PrimarySteppedDown
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

// Socket errors of a connection the database closed or reset.
const SOCKET_CODES = new Set(["EPIPE", "ECONNRESET", "ECONNREFUSED", "ETIMEDOUT"]);

/**
 * A Node socket error the MongoDB driver (7.0) lets out unwrapped: writing a command to a
 * connection whose server has just died ("This socket has been ended by the other party", EPIPE,
 * thrown from the driver's Connection.writeCommand) is not a MongoNetworkError. Told apart from
 * other sockets' errors by being raised inside the driver.
 */
function isDriverSocketError(error: unknown): error is Error {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  return code !== undefined && SOCKET_CODES.has(code) && /[\\/]node_modules[\\/]mongodb[\\/]/.test(error.stack ?? "");
}

/**
 * The database did not answer, or is between primaries: the request may succeed when retried
 * (503 with Retry-After), as opposed to an error in the request or in this service.
 */
export function isDatabaseUnavailable(error: unknown): error is Error {
  if (isDriverSocketError(error)) return true;
  if (!(error instanceof MongoError)) return false;
  return (
    error instanceof MongoNetworkError || // includes timeouts and a pool cleared by a failed connection
    error instanceof MongoServerSelectionError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoServerClosedError ||
    (error instanceof MongoServerError && TRANSIENT_SERVER_CODES.has(Number(error.code)))
  );
}
