// gRPC server reflection (grpc.reflection.v1 and the deprecated v1alpha that older grpcurl and
// buf curl versions still try), so clients can list services and fetch descriptors without
// local protos. Descriptors come from the generated code's embedded DescFiles: those of the
// services and of the error-detail messages, which no method references but clients must decode.
import { create, toBinary } from "@bufbuild/protobuf";
import type { DescFile, DescMessage, DescService } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { errorDetailSchemas } from "../core/errors.js";

/** The request oneof, common to both reflection versions. */
export type ReflectionQuery =
  | { case: "fileByFilename"; value: string }
  | { case: "fileContainingSymbol"; value: string }
  | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  | { case: "allExtensionNumbersOfType"; value: string }
  | { case: "listServices"; value: string }
  | { case: undefined; value?: undefined };

/** The response oneof, common to both reflection versions. */
export type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** Everything reflection can answer, computed once per server. */
export interface ReflectionIndex {
  /** Full service names for list_services, in registration order. */
  readonly serviceNames: readonly string[];
  /** File path (e.g. "srl/v1/models.proto") to file. */
  readonly files: ReadonlyMap<string, DescFile>;
  /** Fully-qualified symbol to the file declaring it. */
  readonly symbols: ReadonlyMap<string, DescFile>;
  /** Message type name to its extensions by field number (every message has an entry). */
  readonly extensions: ReadonlyMap<string, ReadonlyMap<number, DescFile>>;
}

/** The reflection services themselves are always listed and described. */
const reflectionServices: readonly DescService[] = [v1.ServerReflection, v1alpha.ServerReflection];

/**
 * Registers grpc.reflection.v1 and grpc.reflection.v1alpha ServerReflection on the router,
 * describing `services` (the services the server exposes), the reflection services and the
 * messages errors carry as details.
 */
export function registerReflection(router: ConnectRouter, services: readonly DescService[]): ReflectionIndex {
  const index = buildReflectionIndex([...services, ...reflectionServices], errorDetailSchemas);
  router.service(v1.ServerReflection, {
    serverReflectionInfo: (requests) =>
      answerEach(index, requests, (request, answer) =>
        create(v1.ServerReflectionResponseSchema, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answer,
        }),
      ),
  });
  router.service(v1alpha.ServerReflection, {
    serverReflectionInfo: (requests) =>
      answerEach(index, requests, (request, answer) =>
        create(v1alpha.ServerReflectionResponseSchema, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answer,
        }),
      ),
  });
  return index;
}

/**
 * Indexes the files of `services` and of `messages` (types sent outside any method signature,
 * such as error details) and, transitively, everything they import.
 */
export function buildReflectionIndex(
  services: readonly DescService[],
  messages: readonly DescMessage[] = [],
): ReflectionIndex {
  const serviceNames = [...new Set(services.map((s) => s.typeName))];
  const files = new Map<string, DescFile>();
  for (const desc of [...services, ...messages]) {
    collectFiles(desc.file, files);
  }
  const symbols = new Map<string, DescFile>();
  const extensions = new Map<string, Map<number, DescFile>>();
  for (const file of files.values()) {
    indexFile(file, symbols, extensions);
  }
  return { serviceNames, files, symbols, extensions };
}

function collectFiles(file: DescFile, into: Map<string, DescFile>): void {
  if (into.has(file.proto.name)) {
    return;
  }
  into.set(file.proto.name, file);
  for (const dep of file.dependencies) {
    collectFiles(dep, into);
  }
}

/** Adds every symbol a client may ask about: types, methods, fields, oneofs, enum values. */
function indexFile(
  file: DescFile,
  symbols: Map<string, DescFile>,
  extensions: Map<string, Map<number, DescFile>>,
): void {
  for (const desc of nestedTypes(file)) {
    symbols.set(desc.typeName, file);
    switch (desc.kind) {
      case "service":
        for (const method of desc.methods) {
          symbols.set(`${desc.typeName}.${method.name}`, file);
        }
        break;
      case "message":
        indexMessageMembers(desc, file, symbols);
        extensionsOf(extensions, desc.typeName);
        break;
      case "enum": {
        // Enum values are scoped like siblings of their enum (C++ scoping rules).
        const scope = desc.parent?.typeName ?? desc.file.proto.package;
        for (const value of desc.values) {
          symbols.set(scope === "" ? value.name : `${scope}.${value.name}`, file);
        }
        break;
      }
      case "extension":
        extensionsOf(extensions, desc.extendee.typeName).set(desc.number, file);
        break;
    }
  }
}

function indexMessageMembers(message: DescMessage, file: DescFile, symbols: Map<string, DescFile>): void {
  for (const member of [...message.fields, ...message.oneofs]) {
    symbols.set(`${message.typeName}.${member.name}`, file);
  }
}

function extensionsOf(extensions: Map<string, Map<number, DescFile>>, typeName: string): Map<number, DescFile> {
  let byNumber = extensions.get(typeName);
  if (byNumber === undefined) {
    byNumber = new Map();
    extensions.set(typeName, byNumber);
  }
  return byNumber;
}

/** Answers each request of one reflection stream in order; `sent` dedupes files per stream. */
async function* answerEach<Req extends { messageRequest: ReflectionQuery }, Res>(
  index: ReflectionIndex,
  requests: AsyncIterable<Req>,
  respond: (request: Req, answer: ReflectionAnswer) => Res,
): AsyncGenerator<Res> {
  const sent = new Set<string>();
  for await (const request of requests) {
    yield respond(request, answerQuery(index, request.messageRequest, sent));
  }
}

/** Answers one query. `sent` holds the files already sent on this stream, and is updated. */
export function answerQuery(index: ReflectionIndex, query: ReflectionQuery, sent: Set<string>): ReflectionAnswer {
  switch (query.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: index.serviceNames.map((name) => ({ name })) } };
    case "fileByFilename":
      return filesAnswer(index.files.get(query.value), `file not found: ${query.value}`, sent);
    case "fileContainingSymbol":
      return filesAnswer(index.symbols.get(query.value), `symbol not found: ${query.value}`, sent);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = query.value;
      return filesAnswer(
        index.extensions.get(containingType)?.get(extensionNumber),
        `extension not found: ${containingType} ${extensionNumber}`,
        sent,
      );
    }
    case "allExtensionNumbersOfType":
      return extensionNumbersAnswer(index, query.value);
    case undefined:
      return errorAnswer(Code.InvalidArgument, "empty reflection request");
  }
}

function extensionNumbersAnswer(index: ReflectionIndex, typeName: string): ReflectionAnswer {
  const byNumber = index.extensions.get(typeName);
  if (byNumber === undefined) {
    return errorAnswer(Code.NotFound, `type not found: ${typeName}`);
  }
  const extensionNumber = [...byNumber.keys()].sort((a, b) => a - b);
  return { case: "allExtensionNumbersResponse", value: { baseTypeName: typeName, extensionNumber } };
}

function filesAnswer(file: DescFile | undefined, notFound: string, sent: Set<string>): ReflectionAnswer {
  if (file === undefined) {
    return errorAnswer(Code.NotFound, notFound);
  }
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file, sent).map(serializeFile) } };
}

/**
 * The file first (clients such as grpcurl take the first entry as the answer, so it is sent even
 * if sent before), then its transitive imports not yet sent on this stream, breadth-first.
 */
function withDependencies(file: DescFile, sent: Set<string>): DescFile[] {
  const out: DescFile[] = [file];
  sent.add(file.proto.name);
  const queue = [...file.dependencies];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    if (sent.has(next.proto.name)) {
      continue;
    }
    sent.add(next.proto.name);
    out.push(next);
    queue.push(...next.dependencies);
  }
  return out;
}

/** Serialized once per file: descriptors never change while the process runs. */
const serialized = new WeakMap<DescFile, Uint8Array>();

function serializeFile(file: DescFile): Uint8Array {
  let bytes = serialized.get(file);
  if (bytes === undefined) {
    bytes = toBinary(FileDescriptorProtoSchema, file.proto);
    serialized.set(file, bytes);
  }
  return bytes;
}

function errorAnswer(code: Code, errorMessage: string): ReflectionAnswer {
  // Connect's Code uses the gRPC status numbers (NOT_FOUND = 5), as error_code expects.
  return { case: "errorResponse", value: { errorCode: code, errorMessage } };
}
