// REST status and body for a ConnectError: FastAPI's 422 `{"detail": [...]}` for validation,
// `{"detail": "..."}` otherwise, OpenAI's `{"error": {...}}` on the OpenAI-compatible routes, or a
// whole response message when the error carries one (system check: 503 with its report). On the
// OpenAI routes a validation error is vLLM's 400 `{"error": {...}}`, with FastAPI's `detail` list
// in the same body: the SDKs show the message (they drop a 422's body) and clients reading
// `detail` keep working.
import { toJson, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ValidationErrorSchema, type FieldViolation } from "../../../gen/srl/v1/errors_pb.js";
import { encodeMessage } from "./json-encode.js";

export interface RestError {
  status: number;
  body: JsonValue;
  headers: Record<string, string>;
}

const statusOfCode: Partial<Record<Code, number>> = {
  [Code.InvalidArgument]: 400,
  [Code.FailedPrecondition]: 400,
  [Code.OutOfRange]: 400,
  [Code.Unauthenticated]: 401,
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.Aborted]: 409,
  [Code.ResourceExhausted]: 429,
  [Code.Canceled]: 499,
  [Code.Unimplemented]: 501,
  [Code.Unavailable]: 503,
  [Code.DeadlineExceeded]: 504,
};

const openaiType: Record<number, string> = {
  400: "BadRequestError",
  401: "AuthenticationError",
  403: "PermissionDeniedError",
  404: "NotFoundError",
  409: "ConflictError",
  413: "RequestTooLargeError",
  429: "RateLimitError",
  501: "NotImplementedError",
  503: "ServiceUnavailableError",
};

export function restError(error: ConnectError, options: { output?: DescMessage; openai: boolean }): RestError {
  const headers: Record<string, string> = {};
  const [validation] = error.findDetails(ValidationErrorSchema);
  if (validation && validation.detail.length > 0) {
    const detail = validation.detail.map(violationJson);
    if (!options.openai) return { status: 422, body: { detail }, headers };
    const body = messageBody(400, error.rawMessage, true);
    (body.error as JsonObject).param = paramOf(detail[0]);
    return { status: 400, body: { ...body, detail }, headers };
  }
  const status = httpStatusOf(error);
  if (status === 401) headers["www-authenticate"] = "Bearer";
  Object.assign(headers, retryAfterHeader(status, error));
  const [report] = options.output ? error.findDetails(options.output) : [];
  if (options.output && report) return { status, body: encodeMessage(options.output, report), headers };
  const message = status === 500 ? "Internal Server Error" : error.rawMessage;
  return { status, body: messageBody(status, message, options.openai), headers };
}

/** Retry-After of a 429 or 503: the error's own (core/errors.ts puts it in the metadata), else 1 s. */
export function retryAfterHeader(status: number, error: ConnectError): Record<string, string> {
  return status === 429 || status === 503 ? { "retry-after": error.metadata.get("retry-after") ?? "1" } : {};
}

/** The HTTP status of a ConnectError (500 for codes without one). */
export function httpStatusOf(error: ConnectError): number {
  return statusOfCode[error.code] ?? 500;
}

/** The body of an error that is only a message, in the route's shape. */
export function messageBody(status: number, message: string, openai: boolean): JsonObject {
  return openai
    ? { error: { message, type: openaiType[status] ?? "InternalServerError", param: null, code: status } }
    : { detail: message };
}

/** OpenAI's `param`: the offending field's path in the body ("messages.0.content"). */
function paramOf(violation: JsonObject | undefined): string | null {
  const loc = Array.isArray(violation?.loc) ? violation.loc : [];
  const path = (loc[0] === "body" ? loc.slice(1) : loc).map(String).join(".");
  return path || null;
}

function violationJson(violation: FieldViolation): JsonObject {
  const out: JsonObject = {
    type: violation.type,
    loc: (violation.loc?.values ?? []).map((part) => (part.kind.case === "numberValue" ? part.kind.value : String(part.kind.value ?? ""))),
    msg: violation.msg,
  };
  if (violation.input) out.input = toJson(ValueSchema, violation.input);
  if (violation.ctx) out.ctx = violation.ctx;
  return out;
}
