import { execFile } from "node:child_process";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, createFileRegistry, type DescMessage, type DescService, fromBinary, type MessageShape, toBinary, toJson } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { type Any, AnySchema, anyUnpack, type FileDescriptorProto, FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { Events, TrainingJobEventSchema } from "../../gen/srl/v1/events_pb.js";
import { Inference } from "../../gen/srl/v1/inference_pb.js";
import { ModelSchema, Models } from "../../gen/srl/v1/models_pb.js";
import { Training } from "../../gen/srl/v1/training_pb.js";
import { errorDetailSchemas } from "../core/errors.js";
import type { ApiKeys } from "./auth/api-keys.js";
import { Callers } from "./auth/callers.js";
import { defineHandlers } from "../core/rpc/index.js";
import { buildEndpoints, registerEndpoints } from "./pipeline.js";
import { registerReflection } from "./reflection.js";
import { grpcUnary } from "../../test/support/clients.js";

const exposed: DescService[] = [Models, Inference, Training, Events];
const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;

/** Every bearer token is valid: these tests need the pipeline's validation, not its keys. */
const anyKey = { lookup: () => Promise.resolve({ _id: "", prefix: "srl_test", entity: "test", created_at: new Date(), revoked_at: null }) };
const keys = anyKey as Pick<ApiKeys, "lookup"> as ApiKeys;

/** One open ServerReflectionInfo stream: `ask` writes a request and waits for its response. */
interface ReflectionStream<Req, Res> {
  ask(request: Req): Promise<Res>;
  end(): void;
}

/** A grpc-js client built from the generated messages alone (no proto-loader, no .proto files). */
function openReflectionStream<ReqDesc extends DescMessage, ResDesc extends DescMessage>(
  address: string,
  service: DescService,
  requestSchema: ReqDesc,
  responseSchema: ResDesc,
): { stream: ReflectionStream<MessageShape<ReqDesc>, MessageShape<ResDesc>>; client: grpc.Client } {
  type Req = MessageShape<ReqDesc>;
  type Res = MessageShape<ResDesc>;
  const Client = grpc.makeGenericClientConstructor(
    {
      ServerReflectionInfo: {
        path: `/${service.typeName}/ServerReflectionInfo`,
        requestStream: true,
        responseStream: true,
        requestSerialize: (m: Req) => Buffer.from(toBinary(requestSchema, m)),
        requestDeserialize: (b: Buffer) => fromBinary(requestSchema, b),
        responseSerialize: (m: Res) => Buffer.from(toBinary(responseSchema, m)),
        responseDeserialize: (b: Buffer) => fromBinary(responseSchema, b),
      },
    },
    "ServerReflection",
  );
  const client = new Client(address, grpc.credentials.createInsecure());
  const method = client["ServerReflectionInfo"] as () => grpc.ClientDuplexStream<Req, Res>;
  const call = method.call(client);
  const waiting: { resolve: (r: Res) => void; reject: (e: Error) => void }[] = [];
  call.on("data", (response: Res) => waiting.shift()?.resolve(response));
  call.on("error", (err: Error) => waiting.splice(0).forEach((w) => w.reject(err)));
  const stream = {
    ask: (request: Req) =>
      new Promise<Res>((resolve, reject) => {
        waiting.push({ resolve, reject });
        call.write(request);
      }),
    end: () => call.end(),
  };
  return { stream, client };
}

function decodeFiles(response: v1.ServerReflectionResponse | v1alpha.ServerReflectionResponse): FileDescriptorProto[] {
  const answer = response.messageResponse;
  if (answer.case !== "fileDescriptorResponse") {
    throw new Error(`expected file_descriptor_response, got ${String(answer.case)}: ${JSON.stringify(answer.value)}`);
  }
  return answer.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
}

function listedServices(response: v1.ServerReflectionResponse | v1alpha.ServerReflectionResponse): string[] {
  const answer = response.messageResponse;
  if (answer.case !== "listServicesResponse") {
    throw new Error(`expected list_services_response, got ${String(answer.case)}`);
  }
  return answer.value.service.map((s) => s.name);
}

function errorCode(response: v1.ServerReflectionResponse | v1alpha.ServerReflectionResponse): number | undefined {
  const answer = response.messageResponse;
  return answer.case === "errorResponse" ? answer.value.errorCode : undefined;
}

/**
 * Orders files so that each comes after its imports, as createFileRegistry(FileDescriptorSet)
 * requires (its resolver overload mis-orders diamond imports in @bufbuild/protobuf 2.13).
 */
function dependenciesFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const ordered: FileDescriptorProto[] = [];
  const visit = (file: FileDescriptorProto | undefined) => {
    if (file === undefined || ordered.includes(file)) {
      return;
    }
    file.dependency.forEach((name) => visit(byName.get(name)));
    ordered.push(file);
  };
  files.forEach(visit);
  return ordered;
}

/**
 * The details of a google.rpc.Status { code = 1; message = 2; repeated Any details = 3 }. Status
 * itself is part of the gRPC protocol (clients know it), so it is read by hand here.
 */
function statusDetails(statusBytes: Uint8Array): Any[] {
  const details: Any[] = [];
  const reader = new BinaryReader(statusBytes);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 3) details.push(fromBinary(AnySchema, reader.bytes()));
    else reader.skip(wireType);
  }
  return details;
}

const expectedServices = [
  "srl.v1.Models",
  "srl.v1.Inference",
  "srl.v1.Training",
  "srl.v1.Events",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];

describe("gRPC server reflection over connect-node (h2c)", () => {
  let server: http2.Http2Server;
  let port = 0;
  const sessions = new Set<http2.ServerHttp2Session>();
  const clients: grpc.Client[] = [];

  beforeAll(async () => {
    const routes = (router: ConnectRouter) => {
      // No handlers: requests are authenticated and validated, then answered unimplemented.
      registerEndpoints(router, buildEndpoints(exposed.map((service) => defineHandlers(service, {})), new Callers(keys)));
      registerReflection(router, exposed);
    };
    server = http2.createServer(connectNodeAdapter({ routes }));
    server.on("session", (session) => {
      sessions.add(session);
      session.once("close", () => sessions.delete(session));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    clients.forEach((c) => c.close());
    sessions.forEach((s) => s.destroy());
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function openV1() {
    const { stream, client } = openReflectionStream(
      `127.0.0.1:${port}`,
      v1.ServerReflection,
      v1.ServerReflectionRequestSchema,
      v1.ServerReflectionResponseSchema,
    );
    clients.push(client);
    return stream;
  }

  const v1Request = (messageRequest: v1.ServerReflectionRequest["messageRequest"]) =>
    create(v1.ServerReflectionRequestSchema, { host: "localhost", messageRequest });

  it("lists the exposed services and the reflection services (v1)", async () => {
    const stream = openV1();
    const response = await stream.ask(v1Request({ case: "listServices", value: "" }));
    stream.end();
    expect(listedServices(response).sort()).toEqual([...expectedServices].sort());
    expect(response.validHost).toBe("localhost");
    expect(response.originalRequest?.messageRequest.case).toBe("listServices");
  });

  it("lists the same services through v1alpha", async () => {
    const { stream, client } = openReflectionStream(
      `127.0.0.1:${port}`,
      v1alpha.ServerReflection,
      v1alpha.ServerReflectionRequestSchema,
      v1alpha.ServerReflectionResponseSchema,
    );
    clients.push(client);
    const listed = await stream.ask(
      create(v1alpha.ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "*" } }),
    );
    const files = await stream.ask(
      create(v1alpha.ServerReflectionRequestSchema, {
        messageRequest: { case: "fileContainingSymbol", value: "grpc.reflection.v1alpha.ServerReflection" },
      }),
    );
    stream.end();
    expect(listedServices(listed).sort()).toEqual([...expectedServices].sort());
    expect(decodeFiles(files).map((f) => f.name)).toEqual(["grpc/reflection/v1alpha/reflection.proto"]);
  });

  it("returns the file containing srl.v1.Models with its transitive dependencies", async () => {
    const stream = openV1();
    const response = await stream.ask(v1Request({ case: "fileContainingSymbol", value: "srl.v1.Models" }));
    stream.end();
    const files = decodeFiles(response);
    const names = files.map((f) => f.name);
    expect(names[0]).toBe("srl/v1/models.proto"); // clients take the first file as the answer
    expect(names).toEqual(
      expect.arrayContaining([
        "google/api/annotations.proto",
        "google/api/http.proto",
        "google/protobuf/descriptor.proto",
        "srl/v1/options.proto",
      ]),
    );
    expect(new Set(names).size).toBe(names.length);
    // The set is self-contained: it links without any local descriptor.
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: dependenciesFirst(files) }));
    expect(registry.getService("srl.v1.Models")?.methods.map((m) => m.name)).toContain("CreateModel");
  });

  it("resolves methods, fields, messages and file names; dedupes files per stream", async () => {
    const stream = openV1();
    const first = decodeFiles(await stream.ask(v1Request({ case: "fileContainingSymbol", value: "srl.v1.Models.CreateModel" })));
    const field = `${ModelSchema.typeName}.${ModelSchema.fields[0]?.name ?? "id"}`;
    const byField = decodeFiles(await stream.ask(v1Request({ case: "fileContainingSymbol", value: field })));
    const message = decodeFiles(
      await stream.ask(v1Request({ case: "fileContainingSymbol", value: TrainingJobEventSchema.typeName })),
    );
    const byName = decodeFiles(await stream.ask(v1Request({ case: "fileByFilename", value: "google/api/http.proto" })));
    stream.end();
    expect(first[0]?.name).toBe("srl/v1/models.proto");
    // Already sent on this stream: only the requested file comes back.
    expect(byField.map((f) => f.name)).toEqual(["srl/v1/models.proto"]);
    expect(message[0]?.name).toBe("srl/v1/events.proto");
    expect(message.map((f) => f.name)).not.toContain("google/api/annotations.proto");
    expect(byName.map((f) => f.name)).toEqual(["google/api/http.proto"]);
  });

  it("answers extension queries", async () => {
    const stream = openV1();
    const numbers = await stream.ask(
      v1Request({ case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" }),
    );
    const byExtension = await stream.ask(
      v1Request({
        case: "fileContainingExtension",
        value: create(v1.ExtensionRequestSchema, {
          containingType: "google.protobuf.MethodOptions",
          extensionNumber: 72295728,
        }),
      }),
    );
    stream.end();
    expect(numbers.messageResponse.case).toBe("allExtensionNumbersResponse");
    if (numbers.messageResponse.case === "allExtensionNumbersResponse") {
      expect(numbers.messageResponse.value.baseTypeName).toBe("google.protobuf.MethodOptions");
      expect(numbers.messageResponse.value.extensionNumber).toContain(72295728); // google.api.http
    }
    expect(decodeFiles(byExtension)[0]?.name).toBe("google/api/annotations.proto");
  });

  it("answers NOT_FOUND for unknown symbols, files and extensions, and keeps the stream open", async () => {
    const stream = openV1();
    const symbol = await stream.ask(v1Request({ case: "fileContainingSymbol", value: "srl.v1.NoSuchThing" }));
    const file = await stream.ask(v1Request({ case: "fileByFilename", value: "nope.proto" }));
    const extension = await stream.ask(
      v1Request({
        case: "fileContainingExtension",
        value: create(v1.ExtensionRequestSchema, { containingType: "srl.v1.Model", extensionNumber: 9 }),
      }),
    );
    const type = await stream.ask(v1Request({ case: "allExtensionNumbersOfType", value: "srl.v1.Nope" }));
    const stillWorks = await stream.ask(v1Request({ case: "listServices", value: "" }));
    stream.end();
    expect([symbol, file, extension, type].map(errorCode)).toEqual([NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND]);
    expect(listedServices(stillWorks)).toContain("srl.v1.Models");
  });

  it("serves the error-detail files, which no method references", async () => {
    const stream = openV1();
    const bySymbol = decodeFiles(await stream.ask(v1Request({ case: "fileContainingSymbol", value: "srl.v1.ValidationError" })));
    const byField = decodeFiles(await stream.ask(v1Request({ case: "fileContainingSymbol", value: "srl.v1.FieldViolation.loc" })));
    const report = decodeFiles(await stream.ask(v1Request({ case: "fileContainingSymbol", value: "srl.v1.SystemCheckResponse" })));
    stream.end();
    expect(bySymbol.map((f) => f.name)).toEqual(["srl/v1/errors.proto", "google/protobuf/struct.proto"]);
    expect(byField.map((f) => f.name)).toEqual(["srl/v1/errors.proto"]); // already sent on this stream
    expect(report[0]?.name).toBe("srl/v1/system.proto"); // the system check's 503 body: a method's response

    const fresh = openV1();
    const byName = decodeFiles(await fresh.ask(v1Request({ case: "fileByFilename", value: "srl/v1/errors.proto" })));
    // Every detail message the error mapping attaches, not only ValidationError.
    for (const schema of errorDetailSchemas) {
      const answer = await fresh.ask(v1Request({ case: "fileContainingSymbol", value: schema.typeName }));
      expect(decodeFiles(answer)[0]?.name).toBe(schema.file.proto.name);
    }
    fresh.end();
    expect(byName.map((f) => f.name)).toEqual(["srl/v1/errors.proto", "google/protobuf/struct.proto"]);
  });

  it("lets a client decode a validation error's details from reflection alone", async () => {
    const address = `127.0.0.1:${port}`;
    const failure = (await grpcUnary(Inference.method.createChatCompletion, { messages: [{ role: "user" }], n: 0 }, "srl_test", address)).error;
    expect(failure?.code).toBe(INVALID_ARGUMENT);
    // Only the raw trailer is read: the client has no srl protos of its own.
    const details = statusDetails(failure?.statusDetails ?? new Uint8Array());
    expect(details.map((d) => d.typeUrl)).toEqual(["type.googleapis.com/srl.v1.ValidationError"]);

    // As grpcurl does: the descriptors come from reflection, by the Any's type name.
    const stream = openV1();
    const files: FileDescriptorProto[] = [];
    for (const detail of details) {
      const typeName = detail.typeUrl.slice(detail.typeUrl.lastIndexOf("/") + 1);
      files.push(...decodeFiles(await stream.ask(v1Request({ case: "fileContainingSymbol", value: typeName }))));
    }
    stream.end();
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: dependenciesFirst(files) }));
    const decoded = details.map((detail) => {
      const message = anyUnpack(detail, registry);
      const desc = registry.getMessage(message?.$typeName ?? "");
      if (message === undefined || desc === undefined) throw new Error(`cannot decode ${detail.typeUrl}`);
      return toJson(desc, message, { registry });
    });
    expect(decoded).toEqual([
      {
        detail: [
          expect.objectContaining({ loc: ["body", "n"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal" }),
        ],
      },
    ]);
  });

  it("lets buf curl list methods through reflection", async () => {
    const buf = path.resolve("node_modules/.bin/buf");
    const { stdout } = await promisify(execFile)(
      buf,
      ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-methods", `http://127.0.0.1:${port}`],
      { timeout: 30_000 },
    );
    const methods = stdout.split("\n");
    expect(methods).toContain("srl.v1.Models/CreateModel");
    expect(methods).toContain("grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
  }, 40_000);
});
