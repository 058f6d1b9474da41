// The clients real users have: fetch for REST, @connectrpc/connect-node for Connect and gRPC-Web,
// @grpc/grpc-js for gRPC.
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary, type DescService, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { AnySchema, anyUnpack } from "@bufbuild/protobuf/wkt";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { inject } from "vitest";
import { ValidationErrorSchema, type ValidationError } from "../../gen/srl/v1/errors_pb.js";

export const baseUrl = () => inject("baseUrl");

/** The list envelope every REST list answers with. */
export interface ListPage<T> {
  object: string;
  data: T[];
  has_more: boolean;
  first_id: string;
  last_id: string;
}

export interface RestResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export async function rest(method: string, path: string, options: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string>; base?: string } = {}): Promise<RestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch((options.base ?? baseUrl()) + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

function bearer(key: string | undefined): Interceptor[] {
  return key ? [(next) => (req) => (req.header.set("authorization", `Bearer ${key}`), next(req))] : [];
}

export type ConnectFlavor = "connect-json" | "connect-binary" | "connect-http2" | "grpc-web";

export function connectClient<S extends DescService>(service: S, flavor: ConnectFlavor, key?: string): Client<S> {
  const transport =
    flavor === "grpc-web"
      ? createGrpcWebTransport({ baseUrl: baseUrl(), httpVersion: "1.1", interceptors: bearer(key) })
      : createConnectTransport({
          baseUrl: baseUrl(),
          httpVersion: flavor === "connect-http2" ? "2" : "1.1",
          useBinaryFormat: flavor !== "connect-json",
          interceptors: bearer(key),
        });
  return createClient(service, transport);
}

export interface GrpcResult<O extends DescMessage> {
  message?: MessageShape<O>;
  /** `statusDetails`: the raw `grpc-status-details-bin` trailer (a google.rpc.Status), when sent. */
  error?: { code: number; details: string; validation?: ValidationError; statusDetails?: Buffer };
}

/** A unary call through @grpc/grpc-js, with messages serialised by protobuf-es. */
export async function grpcUnary<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  key?: string,
  /** host:port of another server than the suite's. */
  address?: string,
): Promise<GrpcResult<O>> {
  const target = address ?? new URL(baseUrl()).host;
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (key) metadata.set("authorization", `Bearer ${key}`);
  try {
    return await new Promise<GrpcResult<O>>((resolve) => {
      client.makeUnaryRequest(
        `/${method.parent.typeName}/${method.name}`,
        (value: MessageShape<I>) => Buffer.from(toBinary(method.input, value)),
        (bytes: Buffer) => fromBinary(method.output, bytes),
        create(method.input, request),
        metadata,
        (error, message) => {
          if (error) {
            const bin = error.metadata?.get("grpc-status-details-bin")[0];
            resolve({ error: { code: error.code, details: error.details, ...(bin instanceof Buffer ? { validation: validationOf(bin), statusDetails: bin } : {}) } });
          } else resolve({ message });
        },
      );
    });
  } finally {
    client.close();
  }
}

/** Reads google.rpc.Status { code = 1; message = 2; repeated Any details = 3 } for our ValidationError. */
function validationOf(statusBytes: Uint8Array): ValidationError | undefined {
  const reader = new BinaryReader(statusBytes);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 3) {
      const detail = anyUnpack(fromBinary(AnySchema, reader.bytes()), ValidationErrorSchema);
      if (detail) return detail;
    } else reader.skip(wireType);
  }
  return undefined;
}
