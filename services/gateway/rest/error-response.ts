// REST status and body for a ConnectError: FastAPI's 422 `{"detail": [...]}` for validation,
// `{"detail": "..."}` otherwise, OpenAI's `{"error": {...}}` on the OpenAI-compatible routes,
// Anthropic's `{"type": "error", "error": {...}}` on the Messages API, or a whole response message
// when the error carries one (system check: 503 with its report). On the OpenAI routes a
// validation error is vLLM's 400 `{"error": {...}}`, with FastAPI's `detail` list in the same body:
// the SDKs show the message (they drop a 422's body) and clients reading `detail` keep working.
// Anthropic's SDKs likewise expect a 400 `invalid_request_error` for a malformed request.
import { toJson, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ValidationErrorSchema, type FieldViolation } from "../../../gen/srl/v1/errors_pb.js";
import type { RestRules } from "../../../gen/srl/v1/options_pb.js";
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

/** Which API's error shape a route answers with (its `srl.v1.rest` rules). */
export type ErrorStyle = "fastapi" | "openai" | "anthropic";

export function errorStyleOf(rules: RestRules | undefined): ErrorStyle {
  return rules?.anthropicErrors ? "anthropic" : rules?.openaiErrors ? "openai" : "fastapi";
}

// Anthropic's error types by status (https://docs.anthropic.com/en/api/errors).
const anthropicType: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  409: "invalid_request_error",
  413: "request_too_large",
  429: "rate_limit_error",
  503: "overloaded_error",
  504: "timeout_error",
};

export function restError(error: ConnectError, options: { output?: DescMessage; style: ErrorStyle }): RestError {
  const headers: Record<string, string> = {};
  const [validation] = error.findDetails(ValidationErrorSchema);
  if (validation && validation.detail.length > 0) {
    const detail = validation.detail.map(violationJson);
    if (options.style === "fastapi") return { status: 422, body: { detail }, headers };
    // Anthropic names fields by their path in the body ("messages.0.content: Field required").
    if (options.style === "anthropic") return { status: 400, body: messageBody(400, detail.map((v) => `${paramOf(v) ?? "body"}: ${String(v.msg)}`).join("; "), "anthropic"), headers };
    const body = messageBody(400, error.rawMessage, "openai");
    (body.error as JsonObject).param = paramOf(detail[0]);
    return { status: 400, body: { ...body, detail }, headers };
  }
  const status = httpStatusOf(error);
  if (status === 401) headers["www-authenticate"] = "Bearer";
  Object.assign(headers, retryAfterHeader(status, error));
  const [report] = options.output ? error.findDetails(options.output) : [];
  if (options.output && report) return { status, body: encodeMessage(options.output, report), headers };
  const message = status === 500 ? "Internal Server Error" : error.rawMessage;
  return { status, body: messageBody(status, message, options.style), headers };
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
export function messageBody(status: number, message: string, style: ErrorStyle): JsonObject {
  if (style === "anthropic") return { type: "error", error: { type: anthropicType[status] ?? "api_error", message } };
  return style === "openai"
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
