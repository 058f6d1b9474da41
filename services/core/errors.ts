// The one place where domain errors become protocol errors: every service throws ApiError (or a
// helper below); the gateway turns it into a ConnectError (Connect and gRPC) and, for REST, into an
// HTTP status and body (see ../gateway/rest/error-response.ts, which reads the ConnectError only).
import { create, fromJson, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ValidationErrorSchema } from "../../gen/srl/v1/errors_pb.js";

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

export class ApiError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly violations: Violation[] = [],
    readonly body?: ErrorBody,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export const validationError = (violations: Violation[]) =>
  new ApiError("validation", violations.map((v) => `${v.loc.join(".")}: ${v.msg}`).join("; "), violations);
export const badRequest = (message: string) => new ApiError("bad_request", message);
export const notFound = (message: string) => new ApiError("not_found", message);
export const conflict = (message: string) => new ApiError("conflict", message);
export const unauthenticated = (message: string) => new ApiError("unauthenticated", message);
export const overloaded = (message: string) => new ApiError("overloaded", message);
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

/** Any thrown value as a ConnectError; validation violations travel as a srl.v1.ValidationError detail. */
export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof ApiError) {
    const details: { desc: DescMessage; value: MessageShape<DescMessage> }[] = [];
    if (error.violations.length > 0) {
      details.push({
        desc: ValidationErrorSchema,
        value: create(ValidationErrorSchema, {
          detail: error.violations.map((v) => ({
            loc: fromJson(ListValueSchema, v.loc),
            msg: v.msg,
            type: v.type,
            ...(v.input !== undefined ? { input: fromJson(ValueSchema, v.input) } : {}),
            ...(v.ctx !== undefined ? { ctx: v.ctx } : {}),
          })),
        }),
      });
    }
    if (error.body) details.push({ desc: error.body.schema, value: error.body.message });
    return new ConnectError(error.message, codeOfKind[error.kind], undefined, details, error);
  }
  return ConnectError.from(error, Code.Internal);
}
